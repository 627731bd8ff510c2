#!/usr/bin/env python3
"""Checks that include/rmm.f90 matches include/rmm.h (ctest: fortran.binding_matches_header).

- Every function rmm.h declares has a bind(c, name="...") interface in rmm.f90, public, with
  the same argument names in the same order, Fortran types that interoperate with the C types
  (by value, by reference, or type(c_ptr), value for any pointer) and the same result type
  (a subroutine for a void function); and rmm.f90 binds no function that rmm.h lacks.
- The error codes, RMM_MAX_DEVICES and the allocation modes are named constants of the same
  values.
- rmmStatistics_t, rmmAllocationRecord_t and rmmOptions_t are bind(c) types with the same
  fields, in the same order, of interoperable types.

With --tests DIR it checks instead that every function of rmm.h is called by some Fortran test
(DIR/*.f90) (ctest: fortran.cover_every_function).

A C type this script does not know fails the check: extend TYPE maps below along with rmm.f90.
"""
import argparse
import pathlib
import re
import sys

# C type (no const/struct/enum) passed by value -> its Fortran declaration type.
BY_VALUE = {
    "rmmResource_t": "type(c_ptr)",
    "rmmDeviceBuffer_t": "type(c_ptr)",
    "cudaStream_t": "type(c_ptr)",
    "size_t": "integer(c_size_t)",
    "ptrdiff_t": "integer(c_intptr_t)",
    "int": "integer(c_int)",
    "unsigned int": "integer(c_int)",
    "int8_t": "integer(c_int8_t)",
    "int32_t": "integer(c_int32_t)",
    "bool": "logical(c_bool)",
    "rmmFailureCallback_t": "type(c_funptr)",
}
# C pointee type -> the Fortran types a by-reference dummy may have.
BY_REFERENCE = {
    "rmmResource_t": {"type(c_ptr)"},
    "rmmDeviceBuffer_t": {"type(c_ptr)"},
    "cudaStream_t": {"type(c_ptr)"},
    "size_t": {"integer(c_size_t)"},
    "int": {"integer(c_int)"},
    "bool": {"logical(c_bool)"},
    "ptrdiff_t": {"integer(c_intptr_t)", "integer(c_ptrdiff_t)"},
    "rmmStatistics_t": {"type(rmmstatistics_t)"},
    "rmmOptions_t": {"type(rmmoptions_t)"},
    "rmmAllocationRecord_t": {"type(rmmallocationrecord_t)"},
    "char": {"character(kind=c_char)"},  # a dimension(*) array
    "void*": {"type(c_ptr)"},  # void**
    "char*": {"type(c_ptr)"},  # const char**
}
# C result type -> Fortran result type ("subroutine": a void function is a subroutine).
RESULTS = {
    "rmmError_t": "integer(c_int)",
    "bool": "logical(c_bool)",
    "size_t": "integer(c_size_t)",
    "char*": "type(c_ptr)",
    "void*": "type(c_ptr)",
    "void": "subroutine",
}
# C struct field type -> Fortran component type.
FIELDS = {
    "int64_t": "integer(c_int64_t)",
    "uint64_t": "integer(c_int64_t)",
    "int32_t": "integer(c_int32_t)",
    "uint32_t": "integer(c_int32_t)",
    "rmmAllocationMode_t": "integer(c_int32_t)",
    "size_t": "integer(c_size_t)",
    "bool": "logical(c_bool)",
    "void*": "type(c_ptr)",
    "cudaStream_t": "type(c_ptr)",
    "char": "character(kind=c_char)",
}

errors = []


def fail(message):
    errors.append(message)


# --- rmm.h ----------------------------------------------------------------------------------

def strip_c(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return text


def c_type(words):
    """(base type, pointer depth, const pointee) of a C declaration without its name."""
    const = "const" in re.findall(r"\w+", words.split("*")[0])
    depth = words.count("*")
    base = " ".join(w for w in re.findall(r"\w+", words) if w not in ("const", "struct", "enum"))
    return base, depth, const


def parse_header(path):
    raw = path.read_text()
    text = strip_c(raw)
    # Preprocessor lines (with their continuations) hold macros, not declarations.
    defines = dict(re.findall(r"^\s*#\s*define\s+(\w+)\s+(-?\d+)\s*$", text, flags=re.M))
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)

    enums = {}
    for body in re.findall(r"typedef\s+enum\s+\w*\s*\{(.*?)\}", text, flags=re.S):
        for name, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", body):
            enums[name] = value

    structs = {}
    struct_pattern = r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\w+\s*;"
    for name, body in re.findall(struct_pattern, text, flags=re.S):
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            m = re.match(r"(.*?)(\w+)\s*(?:\[\s*(\w+)\s*\])?$", decl, flags=re.S)
            base, depth, _ = c_type(m.group(1))
            fields.append((m.group(2), base + "*" * depth, m.group(3)))
        structs[name] = fields

    functions = {}
    for m in re.finditer(r"([\w\s\*]+?)\b(rmm[A-Z]\w*)\s*\(([^()]*)\)\s*;", text):
        name, params = m.group(2), m.group(3).strip()
        if name in functions:
            fail(f"rmm.h declares {name} twice")
        ret = c_type(m.group(1))
        args = []
        if params and params != "void":
            for param in params.split(","):
                pm = re.match(r"(.*?)(\w+)\s*$", param.strip(), flags=re.S)
                args.append((pm.group(2),) + c_type(pm.group(1)))
        functions[name] = (ret, args)

    # The pattern of c_tests/check_coverage.cmake: every name it finds must be parsed here.
    simple = set(re.findall(r"[ *](rmm[A-Z][A-Za-z0-9_]*)\(", raw))
    for name in sorted(simple - set(functions)):
        fail(f"rmm.h: could not parse the declaration of {name}")
    if len(functions) < 10:
        fail(f"rmm.h: found only {len(functions)} functions: the parser no longer matches it")
    return functions, enums, defines, structs


# --- rmm.f90 --------------------------------------------------------------------------------

def fortran_statements(text):
    """The statements of free-form source, comments removed and continuations joined,
    lower-cased except inside string literals."""
    statements, pending = [], ""
    for line in text.split("\n"):
        code, quote = "", None
        for ch in line:
            if quote:
                code += ch
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
                code += ch
            elif ch == "!":
                break
            else:
                code += ch.lower()
        code = code.strip()
        if pending and code.startswith("&"):
            code = code[1:].lstrip()
        if code.endswith("&"):
            pending += code[:-1] + " "
            continue
        code = pending + code
        pending = ""
        if code:
            statements.extend(s.strip() for s in code.split(";") if s.strip())
    return statements


def split_top(text, sep=","):
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def parse_declaration(statement):
    """(type, attributes, [(name, dims)]) of a type declaration statement, or None."""
    m = re.match(r"((?:integer|real|logical|character|type)\s*\([^)]*\))\s*(.*?)::\s*(.*)$",
                 statement)
    if not m:
        return None
    ftype = re.sub(r"\s+", "", m.group(1))
    attrs = [a.replace(" ", "") for a in split_top(m.group(2)) if a.strip(", ")]
    attrs = [a.lstrip(",") for a in attrs if a.lstrip(",")]
    entities = []
    for entity in split_top(m.group(3)):
        entity = entity.split("=")[0].strip()
        em = re.match(r"(\w+)\s*(?:\((.*)\))?$", entity)
        entities.append((em.group(1), em.group(2)))
    return ftype, attrs, entities


def parse_module(path):
    statements = fortran_statements(path.read_text())
    interfaces, constants, types, public = {}, {}, {}, set()
    current, current_type = None, None
    for st in statements:
        if st.startswith("public"):
            public.update(n.strip() for n in st.split("::", 1)[-1].split(","))
            continue
        fm = re.match(r"(?:(.*?)\s+)?(function|subroutine)\s+(\w+)\s*\(([^)]*)\)\s*(.*)$", st)
        if fm and not st.startswith("end"):
            bind = re.search(r'bind\s*\(\s*c\s*,\s*name\s*=\s*"(\w+)"\s*\)', fm.group(5))
            result = re.search(r"result\s*\(\s*(\w+)\s*\)", fm.group(5))
            subroutine = fm.group(2) == "subroutine"
            current = {
                "fname": fm.group(3),
                "c_name": bind.group(1) if bind else None,
                "args": [a.strip() for a in fm.group(4).split(",") if a.strip()],
                "prefix": "subroutine" if subroutine else re.sub(r"\s+", "", fm.group(1) or ""),
                "result": None if subroutine else result.group(1) if result else fm.group(3),
                "decls": {},
            }
            continue
        if current is not None:
            if re.match(r"end\s*(function|subroutine)", st):
                if current["c_name"]:
                    if current["c_name"] in interfaces:
                        fail(f"rmm.f90 binds {current['c_name']} twice")
                    interfaces[current["c_name"]] = current
                current = None
                continue
            decl = parse_declaration(st)
            if decl:
                for name, dims in decl[2]:
                    current["decls"][name] = (decl[0], decl[1], dims)
            continue
        tm = re.match(r"type\s*,\s*bind\s*\(\s*c\s*\)\s*::\s*(\w+)$", st)
        if tm:
            current_type = tm.group(1)
            types[current_type] = []
            continue
        if current_type is not None:
            if re.match(r"end\s*type", st):
                current_type = None
                continue
            decl = parse_declaration(st)
            if decl:
                for name, dims in decl[2]:
                    types[current_type].append((name, decl[0], dims))
            continue
        decl = parse_declaration(st)
        if decl and "parameter" in decl[1]:
            value = st.split("::", 1)[1].split("=", 1)[1].strip()
            constants[decl[2][0][0]] = value
    return interfaces, constants, types, public


# --- The checks -----------------------------------------------------------------------------

def check_argument(fn, c_arg, decl):
    name, base, depth, const = c_arg
    if decl is None:
        fail(f"{fn}: the argument {name} is not declared in rmm.f90")
        return
    ftype, attrs, dims = decl
    value = "value" in attrs
    shown = f"{fn}({name}): C `{'const ' if const else ''}{base}{'*' * depth}` as Fortran " \
            f"`{ftype}{', ' if attrs else ''}{', '.join(attrs)}`"
    if depth == 0:
        wanted = BY_VALUE.get(base)
        if wanted is None:
            fail(f"{shown}: check_binding.py knows no Fortran type for the C type {base}")
        elif ftype != wanted or not value or dims:
            fail(f"{shown}: expected `{wanted}, value`")
        return
    if value:
        if ftype != "type(c_ptr)" or dims:
            fail(f"{shown}: a pointer by value must be type(c_ptr)")
        return
    pointee = base + "*" * (depth - 1)
    allowed = BY_REFERENCE.get(pointee)
    if allowed is None:
        fail(f"{shown}: check_binding.py knows no Fortran type for the C type {pointee}*")
        return
    if ftype not in allowed:
        fail(f"{shown}: expected one of {sorted(allowed)} by reference, or type(c_ptr), value")
    if pointee == "char" and not any(a.replace(" ", "") == "dimension(*)" for a in attrs) \
            and dims != "*":
        fail(f"{shown}: a C string must be an assumed-size array, dimension(*)")
    if const and depth == 1 and "intent(in)" not in attrs:
        fail(f"{shown}: a const pointee must be intent(in)")
    if not const and "intent(inout)" not in attrs:
        # rmm writes out-pointers only on success: with intent(out) the compiler may drop the
        # value a variable had before a failed call.
        fail(f"{shown}: an out-pointer must be intent(inout)")


def check_binding(header, module):
    functions, enums, defines, structs = parse_header(header)
    interfaces, constants, types, public = parse_module(module)

    for name in sorted(set(functions) - set(interfaces)):
        fail(f"rmm.h declares {name} but rmm.f90 has no bind(c, name=\"{name}\") interface")
    # Functions of other libraries (strlen of the C library) are not rmm's.
    for name in sorted(n for n in set(interfaces) - set(functions) if n.startswith("rmm")):
        fail(f"rmm.f90 binds {name}, which rmm.h does not declare")

    for name in sorted(set(functions) & set(interfaces)):
        (ret_base, ret_depth, _), c_args = functions[name]
        iface = interfaces[name]
        if iface["fname"] != name.lower():
            fail(f"{name}: the Fortran interface is named {iface['fname']}")
        if name.lower() not in public:
            fail(f"{name}: the interface is not public")
        if [a.lower() for a, *_ in c_args] != iface["args"]:
            fail(f"{name}: arguments ({', '.join(iface['args'])}) in rmm.f90, "
                 f"({', '.join(a for a, *_ in c_args)}) in rmm.h")
            continue
        for c_arg in c_args:
            check_argument(name, c_arg, iface["decls"].get(c_arg[0].lower()))
        c_ret = ret_base + "*" * ret_depth
        wanted = RESULTS.get(c_ret)
        got = iface["prefix"] or (iface["decls"].get(iface["result"]) or ("",))[0]
        if wanted is None:
            fail(f"{name}: check_binding.py knows no Fortran type for the C result {c_ret}")
        elif got != wanted:
            fail(f"{name}: returns {c_ret} in rmm.h, `{got}` in rmm.f90 (expected {wanted})")

    expected = dict(enums)
    expected.update(defines)
    for name, value in sorted(expected.items()):
        got = constants.get(name.lower())
        if got is None:
            fail(f"rmm.h defines {name} = {value}; rmm.f90 has no such named constant")
        elif re.sub(r"_\w+$", "", got) != value:
            fail(f"{name} is {value} in rmm.h, {got} in rmm.f90")
        elif name.lower() not in public:
            fail(f"the constant {name} is not public")

    for name, fields in sorted(structs.items()):
        got = types.get(name.lower())
        if got is None:
            fail(f"rmm.h defines struct {name}; rmm.f90 has no bind(c) type {name}")
            continue
        if name.lower() not in public:
            fail(f"the type {name} is not public")
        if [f[0].lower() for f in fields] != [g[0] for g in got]:
            fail(f"{name}: fields ({', '.join(f[0] for f in fields)}) in rmm.h, "
                 f"({', '.join(g[0] for g in got)}) in rmm.f90")
            continue
        for (field, ctype, c_dims), (_, ftype, f_dims) in zip(fields, got):
            wanted = FIELDS.get(ctype)
            if wanted is None:
                fail(f"{name}%{field}: check_binding.py knows no Fortran type for {ctype}")
            elif ftype != wanted:
                fail(f"{name}%{field}: C {ctype}, Fortran {ftype} (expected {wanted})")
            if (c_dims or "").lower() != (f_dims or "").replace(" ", ""):
                fail(f"{name}%{field}: dimension [{c_dims}] in rmm.h, ({f_dims}) in rmm.f90")
    for name in sorted(set(types) - {s.lower() for s in structs}):
        fail(f"rmm.f90 has a bind(c) type {name} that rmm.h does not define")

    return len(functions), len(expected), len(structs)


def check_coverage(header, tests):
    functions, *_ = parse_header(header)
    text = ""
    for path in sorted(tests.glob("*.f90")):
        text += "\n".join(fortran_statements(path.read_text())) + "\n"
    for name in sorted(functions):
        if not re.search(r"\b" + name.lower() + r"\s*\(", text):
            fail(f"no Fortran test ({tests}/*.f90) calls {name}")
    return len(functions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = pathlib.Path(__file__).resolve().parent.parent
    parser.add_argument("--header", default=str(root / "include" / "rmm.h"))
    parser.add_argument("--module", default=str(root / "include" / "rmm.f90"))
    parser.add_argument("--tests", help="check that the Fortran tests in this folder call "
                                        "every function instead")
    args = parser.parse_args()
    if args.tests:
        count = check_coverage(pathlib.Path(args.header), pathlib.Path(args.tests))
        summary = f"all {count} functions of rmm.h are called by the Fortran tests"
    else:
        functions, constants, structs = check_binding(pathlib.Path(args.header),
                                                      pathlib.Path(args.module))
        summary = (f"rmm.f90 matches rmm.h: {functions} functions, {constants} constants, "
                   f"{structs} structs")
    if errors:
        for message in errors:
            print("error: " + message, file=sys.stderr)
        print(f"{len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
