#!/usr/bin/env python3
"""Generates the rmm_allocate / rmm_free section of include/rmm.f90.

The generic helpers are the same code for 4 element types x 3 ranks (x 2 kinds of extents for
rmm_allocate); this script writes them between the BEGIN/END GENERATED markers of rmm.f90.

    f_tests/generate_helpers.py           rewrite include/rmm.f90 in place
    f_tests/generate_helpers.py --check   exit 1 if include/rmm.f90 is not up to date
                                          (ctest: fortran.generated_helpers_up_to_date)
"""
import argparse
import pathlib
import sys

# (name, Fortran type, a constant of the type for storage_size)
TYPES = [
    ("real32", "real(c_float)", "0.0_c_float"),
    ("real64", "real(c_double)", "0.0_c_double"),
    ("int32", "integer(c_int32_t)", "0_c_int32_t"),
    ("int64", "integer(c_int64_t)", "0_c_int64_t"),
]
RANKS = [1, 2, 3]
# (suffix, kind of the extents)
EXTENT_KINDS = [("i32", "c_int32_t"), ("i64", "c_int64_t")]

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULE = ROOT / "include" / "rmm.f90"
NOTE = "(f_tests/generate_helpers.py; do not edit by hand)"
MARKERS = {
    "INTERFACES": (f"  ! BEGIN GENERATED INTERFACES {NOTE}\n", "  ! END GENERATED INTERFACES\n"),
    "PROCEDURES": (f"  ! BEGIN GENERATED PROCEDURES {NOTE}\n", "  ! END GENERATED PROCEDURES\n"),
}


def alloc_name(t, rank, k):
    return f"rmm_allocate_{t}_{rank}d_{k}"


def free_name(t, rank):
    return f"rmm_free_{t}_{rank}d"


def wrap_list(prefix, names, indent):
    """`prefix` followed by the comma-separated names, continued with & under 100 columns."""
    lines, line = [], prefix
    for i, name in enumerate(names):
        item = name + (", " if i + 1 < len(names) else "")
        if len(line) + len(item.rstrip()) > 98:
            lines.append(line.rstrip() + " &")
            line = indent
        line += item
    lines.append(line)
    return "\n".join(lines) + "\n"


def interfaces():
    allocs = [alloc_name(t, r, k) for t, _, _ in TYPES for r in RANKS for k, _ in EXTENT_KINDS]
    frees = [free_name(t, r) for t, _, _ in TYPES for r in RANKS]
    out = []
    out.append("""\
  ! call rmm_allocate(array, n1 [, n2 [, n3]] [, stream] [, status] [, resource])
  !   Points `array`, a pointer array of real(c_float), real(c_double), integer(c_int32_t) or
  !   integer(c_int64_t) of rank 1 to 3, at new rmm memory of extents n1, n2, n3 (lower bounds
  !   1; all of kind c_int32_t or all of kind c_int64_t). The memory comes from `resource`
  !   (rmmResourceAllocate) when it is given, otherwise from the current device's resource
  !   (rmmAlloc), for use on `stream` (default: the default stream, c_null_ptr). Zero or
  !   negative extents give a zero-size array, as ALLOCATE does, without device memory.
  !   On failure `array` is nullified and `status` receives the error; without `status` a
  !   failure stops the program (rmm_check).
  interface rmm_allocate
""")
    out.append(wrap_list("    module procedure ", allocs, "      "))
    out.append("""\
  end interface rmm_allocate

  ! call rmm_free(array [, stream] [, status] [, resource])
  !   Returns the memory of a pointer from rmm_allocate, in the order of `stream`, and
  !   nullifies `array`: with rmmResourceDeallocate on `resource` when it is given (it must be
  !   the resource that allocated), otherwise with rmmFree. A disassociated `array` is a no-op
  !   (the pointer must not be undefined). On failure `array` stays associated and `status`
  !   receives the error (a pointer freed twice, through a copy of it:
  !   RMM_ERROR_INVALID_ARGUMENT); without `status` a failure stops the program.
  interface rmm_free
""")
    out.append(wrap_list("    module procedure ", frees, "      "))
    out.append("  end interface rmm_free\n\n")
    out.append("  ! The targets of zero-size arrays from rmm_allocate.\n")
    for t, ftype, _ in TYPES:
        out.append(f"  {ftype}, target, save :: rmm_empty_{t}(0)\n")
    return "".join(out)


def procedures():
    out = []
    for t, ftype, const in TYPES:
        for rank in RANKS:
            dims = ", ".join([":"] * rank)
            ns = [f"n{i}" for i in range(1, rank + 1)]
            for k, kind in EXTENT_KINDS:
                extents = ", ".join(f"int({n}, c_int64_t)" for n in ns)
                remap = ", ".join(f"1:max({n}, 0_{kind})" for n in ns)
                name = alloc_name(t, rank, k)
                out.append(f"""\
  subroutine {name}(array, {", ".join(ns)}, stream, status, resource)
    {ftype}, pointer, intent(out) :: array({dims})
    integer({kind}), intent(in) :: {", ".join(ns)}
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    type(c_ptr) :: ptr
    integer(c_size_t) :: bytes
    integer(c_int) :: code
    bytes = rmm_array_bytes([{extents}], storage_size({const}) / 8)
    code = rmm_helper_allocate(bytes, ptr, stream, resource)
    if (code /= RMM_SUCCESS) then
      nullify (array)
    else if (bytes == 0) then
      array({remap}) => rmm_empty_{t}
    else
      call c_f_pointer(ptr, array, [{", ".join(ns)}])
    end if
    call rmm_helper_status(code, status, 'rmm_allocate')
  end subroutine {name}

""")
            first = ", ".join(f"lbound(array, {i})" for i in range(1, rank + 1))
            name = free_name(t, rank)
            out.append(f"""\
  subroutine {name}(array, stream, status, resource)
    {ftype}, pointer, intent(inout) :: array({dims})
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr), intent(in), optional :: resource
    integer(c_int) :: code
    type(c_ptr) :: first
    integer(c_size_t) :: bytes
    code = RMM_SUCCESS
    if (associated(array)) then
      if (size(array, kind=c_size_t) > 0) then
        first = c_loc(array({first}))
        bytes = size(array, kind=c_size_t) * int(storage_size({const}) / 8, c_size_t)
        code = rmm_helper_free(first, bytes, stream, resource)
      end if
      if (code == RMM_SUCCESS) nullify (array)
    end if
    call rmm_helper_status(code, status, 'rmm_free')
  end subroutine {name}

""")
    return fortran_wrap("".join(out).rstrip("\n") + "\n")


def fortran_wrap(code, width=100):
    """Breaks statements longer than `width` columns with a continuation, after the rightmost
    ", " of the least nested level that fits."""
    out = []
    for line in code.split("\n"):
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        while len(line) > width and not line.lstrip().startswith("!"):
            depth, cuts = 0, []
            for i, ch in enumerate(line[: width - 2]):
                depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
                if line.startswith(", ", i) and i > len(indent):
                    cuts.append((depth, -i))
            if not cuts:
                break
            cut = -min(cuts)[1]
            out.append(line[: cut + 1] + " &")
            line = indent + line[cut + 2 :]
        out.append(line)
    return "\n".join(out)


def generate(text):
    for key, body in (("INTERFACES", interfaces()), ("PROCEDURES", procedures())):
        begin, end = MARKERS[key]
        start = text.find(begin)
        stop = text.find(end)
        if start < 0 or stop < start:
            sys.exit(f"{MODULE}: the markers of the generated {key.lower()} are missing")
        text = text[: start + len(begin)] + body + text[stop:]
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, do not write")
    parser.add_argument("--module", default=str(MODULE), help="the rmm.f90 to process")
    args = parser.parse_args()
    path = pathlib.Path(args.module)
    current = path.read_text()
    wanted = generate(current)
    if args.check:
        if current != wanted:
            print(f"{path} is not up to date: run f_tests/generate_helpers.py", file=sys.stderr)
            return 1
        print(f"{path}: the generated helpers are up to date")
        return 0
    if current != wanted:
        path.write_text(wanted)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
