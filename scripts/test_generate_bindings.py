#!/usr/bin/env python3
"""Tests of scripts/generate_bindings.py (plain unittest; ctest: bindings.generator).

rmm.h will gain functions and types the committed bindings have never seen, so besides rmm.h
these tests feed the generator made-up headers in cbindgen's style: what it must bind, what it
must refuse, and (with gfortran) that the Fortran it writes compiles without a warning.
"""
import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
sys.path.insert(0, str(HERE))
import generate_bindings as gb  # noqa: E402

ROOT = HERE.parent

# cbindgen's layout: doc comments, a #define before its use, an enum with implicit values, a
# declaration over several lines, a C++-only block, the types rmm.h does not use yet.
SAMPLE = """\
/* The prose of the header, not an item's doc. */
#ifndef SAMPLE_H
#define SAMPLE_H
#include <stdint.h>
typedef struct rmmThing_st* rmmThing_t;
#define SAMPLE_MACRO(x) ((x) + 1)

// How many slots.
#define RMM_SLOTS 0x10

// Colours.
typedef enum rmmColour_t {
  // Red.
  RMM_RED = 3,
  RMM_GREEN,
  RMM_BLUE,
} rmmColour_t;

typedef struct rmmOpaque_t rmmOpaque_t;

// A pair.
typedef struct rmmPair_t {
  // The first.
  int16_t first;
  double second;
  uint8_t slots[RMM_SLOTS];
  rmmThing_t thing;
} rmmPair_t;

// Visits a pair.
typedef void (*rmmVisitor_t)(const struct rmmPair_t *pair, void *arg);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Fills `*pair`; `hint` may be NULL. `out` may not be NULL.
enum rmmError_t rmmPairFill(struct rmmPair_t *pair,
                            const struct rmmPair_t *hint,
                            int16_t *out,
                            rmmColour_t colour);

// Walks the pairs with `visitor`; writes the count to `*count` unless it is NULL.
void rmmPairWalk(rmmVisitor_t visitor,
                 void *arg,
                 rmmOpaque_t *opaque,
                 size_t *count);

// Writes a new pointer to `*ptr` (NULL for 0 bytes).
double rmmPairScale(void **ptr, const char *label, char *buffer, float factor);

// `rmmPairWalk` on the current device.
void rmmPairWalkHere(rmmVisitor_t visitor, void *arg, rmmOpaque_t *opaque, size_t *count);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus
#endif  /* SAMPLE_H */
"""

ERRORS = """\
typedef enum rmmError_t {
  RMM_SUCCESS = 0,
} rmmError_t;
"""

MODULE = """\
module sample
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! BEGIN GENERATED BINDINGS
  ! END GENERATED BINDINGS
end module sample
"""


def fortran(header_text, undocumented=None):
    header = gb.parse_header(header_text)
    bindings = gb.fortran_bindings(header, {}, undocumented or {})
    return gb.fill(MODULE, "sample.f90", "!", {"BINDINGS": bindings})


class ParseTest(unittest.TestCase):
    def test_sample(self):
        header = gb.parse_header(ERRORS + SAMPLE)
        self.assertEqual([f.name for f in header.functions],
                         ["rmmPairFill", "rmmPairWalk", "rmmPairScale", "rmmPairWalkHere"])
        values = {c.name: c.value for c in header.constants}
        self.assertEqual(values, {"RMM_SUCCESS": 0, "RMM_SLOTS": 16, "RMM_RED": 3,
                                  "RMM_GREEN": 4, "RMM_BLUE": 5})
        self.assertEqual(header.constant("RMM_RED").doc, ["Red."])
        self.assertEqual(header.structs["rmmPair_t"].fields[2].dim, "RMM_SLOTS")
        self.assertIn("rmmOpaque_t", header.opaque)
        fill = header.functions[0]
        self.assertEqual(fill.doc, ["Fills `*pair`; `hint` may be NULL. `out` may not be NULL."])
        self.assertEqual([str(p.ctype) for p in fill.params],
                         ["rmmPair_t*", "const rmmPair_t*", "int16_t*", "rmmColour_t"])

    def test_rmm_h(self):
        header = gb.parse_header((ROOT / "include" / "rmm.h").read_text())
        self.assertGreater(len(header.functions), 10)
        # Every function binds, also those python/rmm_rs/ does not call (yet).
        for function in header.functions:
            gb.ctypes_type(header, function.result, function.name)
            for param in function.params:
                gb.ctypes_type(header, param.ctype, function.name)
        gb.fortran_bindings(header, {})

    def refused(self, text, *expected):
        with self.assertRaises(gb.HeaderError) as caught:
            fortran(ERRORS + text)
        for part in expected:
            self.assertIn(part, str(caught.exception))

    def test_unknown_types_fail(self):
        self.refused("void rmmF(long long x);\n", "long long", "TYPES")
        self.refused("void rmmF(struct rmmNever_t *x);\n", "rmmNever_t")
        self.refused("rmmNever_t rmmF(void);\n", "rmmNever_t")
        self.refused("typedef struct rmmS_t { wchar_t c; } rmmS_t;\nvoid rmmF(rmmS_t *s);\n",
                     "wchar_t")
        self.refused("void rmmF(volatile int *x);\n", "volatile int")

    def test_what_has_no_binding_fails(self):
        self.refused("void rmmF(int x, ...);\n", "variadic")
        self.refused("void rmmF(int (*f)(int));\n", "cannot read")
        self.refused("void rmmF(int x[4]);\n", "cannot read")
        self.refused("void rmmF(size_t);\n", "cannot read")
        self.refused("#define RMM_NAME \"text\"\n", "RMM_NAME")
        self.refused("typedef enum rmmE_t { RMM_A = 1 << 2 } rmmE_t;\n", "RMM_A")
        self.refused("typedef struct rmmS_t { int a[RMM_NOWHERE]; } rmmS_t;\n", "RMM_NOWHERE")
        self.refused("#pragma once\n#warning x\n", "#warning")
        self.refused("void rmmF(int ***x);\n", "int***")

    def test_names_fortran_cannot_tell_apart_fail(self):
        self.refused("void rmmF(void);\nvoid RMMF(void);\n", "ignores case")
        self.refused("void rmmF(int a, int A);\n", "case")
        self.refused("void rmmF(int c_int);\n", "c_int")
        self.refused("void _rmmF(void);\n", "Fortran name")

    def test_stale_exceptions_fail(self):
        for undocumented, expected in (({"rmmPairGone": {"x"}}, "does not declare"),
                                       ({"rmmPairFill": {"hint"}}, "documents")):
            with self.assertRaises(gb.HeaderError) as caught:
                fortran(ERRORS + SAMPLE, undocumented)
            self.assertIn(expected, str(caught.exception))


class FortranTest(unittest.TestCase):
    def setUp(self):
        self.text = fortran(ERRORS + SAMPLE)

    def test_nullable_pointers_are_c_ptr_by_value(self):
        self.assertIn("      type(c_ptr), value :: hint\n", self.text)
        self.assertIn("      integer(c_int16_t), intent(inout) :: out\n", self.text)
        self.assertIn("      type(rmmPair_t), intent(inout) :: pair\n", self.text)
        self.assertIn("      type(c_ptr), value :: count\n", self.text)
        # `*ptr` (NULL for 0 bytes) is what rmm writes, not a NULL argument.
        self.assertIn("      type(c_ptr), intent(inout) :: ptr\n", self.text)

    def test_documented_as_another_function(self):
        here = self.text[self.text.index("subroutine rmmPairWalkHere"):]
        self.assertIn("      type(c_ptr), value :: count\n", here)

    def test_types(self):
        self.assertIn("  integer(c_int32_t), parameter :: RMM_SLOTS = 16\n", self.text)
        self.assertIn("  integer(c_int), parameter :: RMM_BLUE = 5\n", self.text)
        self.assertIn("    integer(c_int8_t) :: slots(RMM_SLOTS) = 0  ! uint8_t in C\n", self.text)
        self.assertIn("    real(c_double) :: second = 0.0_c_double\n", self.text)
        self.assertIn("    type(c_ptr) :: thing = c_null_ptr\n", self.text)
        self.assertIn("      character(kind=c_char), dimension(*), intent(in) :: label\n",
                      self.text)
        self.assertIn("      character(kind=c_char), dimension(*), intent(inout) :: buffer\n",
                      self.text)
        self.assertIn("      type(c_ptr), value :: opaque\n", self.text)
        self.assertIn("    subroutine rmmVisitor_t(pair, arg) bind(c)\n", self.text)
        self.assertIn("      type(rmmPair_t), intent(in) :: pair\n", self.text)
        self.assertIn("      type(c_funptr), value :: visitor\n", self.text)
        self.assertIn('    real(c_double) function rmmPairScale(ptr, label, buffer, factor) '
                      'bind(c, name="rmmPairScale")\n', self.text)
        self.assertIn('    integer(c_int) function rmmPairFill(pair, hint, out, colour) '
                      'bind(c, name="rmmPairFill")\n', self.text)
        self.assertIn("    ! Walks the pairs with `visitor`; writes the count to `*count` unless "
                      "it is NULL.\n", self.text)

    def test_idempotent(self):
        header = gb.parse_header(ERRORS + SAMPLE)
        again = gb.fill(self.text, "sample.f90", "!",
                        {"BINDINGS": gb.fortran_bindings(header, {}, {})})
        self.assertEqual(again, self.text)

    @unittest.skipUnless(shutil.which("gfortran"), "no gfortran")
    def test_compiles_without_warnings(self):
        with tempfile.TemporaryDirectory() as folder:
            source = pathlib.Path(folder) / "sample.f90"
            source.write_text(self.text)
            done = subprocess.run(["gfortran", "-std=f2008", "-pedantic", "-Wall", "-Wextra",
                                   "-Werror", "-c", str(source)], cwd=folder,
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stderr, "")


class PythonTest(unittest.TestCase):
    HAND = '''\
import ctypes
# BEGIN GENERATED BINDINGS
# END GENERATED BINDINGS
def f(lib):
    lib.rmmPairFill(None, None, None, 0)
    _call("rmmPairWalk")
    return _CPair()
'''

    def generate(self, hand, header_text=ERRORS + SAMPLE):
        return gb.generate_python(hand, gb.parse_header(header_text), "sample.py")

    def test_signatures_of_the_functions_named(self):
        text = self.generate(self.HAND)
        namespace = {}
        exec(compile(text.replace("def f", "def _unused"), "sample.py", "exec"), namespace)
        signatures = namespace["_SIGNATURES"]
        self.assertEqual(list(signatures), ["rmmPairFill", "rmmPairWalk"])
        restype, argtypes = signatures["rmmPairWalk"]
        self.assertIsNone(restype)
        self.assertIs(argtypes[0], namespace["_CVisitor"])
        self.assertEqual(argtypes[1:], [ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_size_t)])
        pair = namespace["_CPair"]
        self.assertEqual([f for f, _ in pair._fields_], ["first", "second", "slots", "thing"])
        self.assertEqual(ctypes.sizeof(pair._fields_[2][1]), 16)
        self.assertEqual(signatures["rmmPairFill"][1][0], ctypes.POINTER(pair))
        self.assertEqual(namespace["SUCCESS"], 0)

    def test_the_other_modules_of_a_package_name_functions_too(self):
        # python/rmm_rs/_bindings.py binds what any module of the package names.
        with tempfile.TemporaryDirectory() as name:
            package = pathlib.Path(name) / "pkg"
            (package / "sub").mkdir(parents=True)
            (package / "__init__.py").write_text("")
            (package / "sub" / "user.py").write_text("_call('rmmPairWalk')\n")
            bindings = package / "_bindings.py"
            bindings.write_text(self.HAND.replace('_call("rmmPairWalk")', "pass"))
            text = gb.generate_python(bindings.read_text(), gb.parse_header(ERRORS + SAMPLE), bindings)
        namespace = {}
        exec(compile(text.replace("def f", "def _unused"), "pkg/_bindings.py", "exec"), namespace)
        self.assertEqual(list(namespace["_SIGNATURES"]), ["rmmPairFill", "rmmPairWalk"])

    def test_naming_an_undeclared_function_fails(self):
        with self.assertRaises(gb.HeaderError) as caught:
            self.generate(self.HAND + "lib.rmmPairGone()\n")
        self.assertIn("rmmPairGone", str(caught.exception))

    def test_the_constants_and_size_max(self):
        namespace = {}
        exec(compile(self.generate(self.HAND).replace("def f", "def _unused"), "sample.py", "exec"),
             namespace)
        self.assertEqual((namespace["SLOTS"], namespace["RED"], namespace["BLUE"]), (16, 3, 5))
        self.assertEqual(namespace["SIZE_MAX"], 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1)

    def test_restating_a_constant_fails(self):
        # Each line restates one: the package must take the generated constant.
        for copy in ("_SLOTS = 16", "SLOTS: int = 0x10", "RMM_SLOTS = 16", "_SIZE_MAX = (1 << 64) - 1",
                     "    BLUE = 5", "flags = 3 if x else 0  # RMM_RED"):
            with self.subTest(copy=copy), self.assertRaises(gb.HeaderError) as caught:
                self.generate(self.HAND + copy + "\n")
            self.assertIn("restates constants of rmm.h", str(caught.exception))
            self.assertIn("sample.py:8: ", str(caught.exception))
        # Taking the generated one, or a name that only looks alike, is fine.
        for fine in ("SLOTS_USED = _bindings.SLOTS", "_RED = RED", "slots = 16", "red = 3  # a colour",
                     "SLOT = 16", "x = 3  # RMM_NOWHERE", "y = RED  # RMM_RED"):
            with self.subTest(fine=fine):
                self.generate(self.HAND + fine + "\n")

    def test_the_package_restates_no_constant(self):
        # The drift check of python/rmm_rs/: rmm.h's constants, SIZE_MAX and the error codes
        # come from the generated part of _bindings.py only.
        header = gb.parse_header((ROOT / "include" / "rmm.h").read_text())
        bindings = ROOT / "python" / "rmm_rs" / "_bindings.py"
        own = gb.hand_written(bindings.read_text(), bindings, "#", keep_lines=True)
        copies = gb.copied_constants(header, [("rmm_rs/_bindings.py", own)] + gb.package_modules(bindings))
        self.assertEqual(copies, [])


class CheckTest(unittest.TestCase):
    """--check on copies of the committed files: quiet when they are up to date, exit 1 with a
    diff once a generated line is edited."""

    def run_check(self, folder):
        return subprocess.run(
            [sys.executable, str(HERE / "generate_bindings.py"), "--check",
             "--fortran", str(folder / "rmm.f90"), "--python", str(folder / "rmm_rs" / "_bindings.py")],
            capture_output=True, text=True)

    def test_drift_fails(self):
        with tempfile.TemporaryDirectory() as name:
            folder = pathlib.Path(name)
            shutil.copy(ROOT / "include" / "rmm.f90", folder / "rmm.f90")
            shutil.copytree(ROOT / "python" / "rmm_rs", folder / "rmm_rs",
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            done = self.run_check(folder)
            self.assertEqual(done.returncode, 0, done.stderr)
            module = folder / "rmm.f90"
            text = module.read_text()
            edited = text.replace("integer(c_size_t), value :: limit",
                                  "integer(c_int), value :: limit", 1)
            self.assertNotEqual(edited, text)
            module.write_text(edited)
            done = self.run_check(folder)
            self.assertEqual(done.returncode, 1)
            self.assertIn("-      integer(c_int), value :: limit", done.stderr)
            self.assertIn("rmm.f90 is not what", done.stderr)
            self.assertIn("up to date", done.stdout)  # rmm_rs/_bindings.py


if __name__ == "__main__":
    os.chdir(ROOT)
    unittest.main()
