"""The Python package without a GPU: inspect, plan, generate and emit from SciPy matrices, files
and generator specs, and bad input raising the right exception with the library's message.

    python3 -m unittest discover -s python/tests -p 'test_*.py'
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import scipy.io
import scipy.sparse as sp

import spmvc


def poisson2d(n):
    """The 5-point Laplacian on an n x n grid (SPD)."""
    t = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n))
    e = sp.diags([-1.0, -1.0], [-1, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), t) + sp.kron(e, sp.eye(n))).tocsr()


class InspectAndPlan(unittest.TestCase):
    def setUp(self):
        self.a = poisson2d(40)  # 1600 rows, 7840 nonzeros

    def test_inspect_counts_what_scipy_holds(self):
        p = spmvc.inspect(self.a)
        self.assertEqual(p["nrows"], 1600)
        self.assertEqual(p["ncols"], 1600)
        self.assertEqual(p["nnz"], self.a.nnz)
        self.assertEqual(p.nnz, self.a.nnz)
        self.assertIn("1,600 x 1,600", str(p))
        self.assertEqual(json.loads(p.json)["nnz"], self.a.nnz)

    def test_duplicates_are_summed_and_rows_sorted(self):
        # COO with a repeated entry and columns out of order: the same matrix as its CSR form.
        coo = sp.coo_matrix(([1.0, 2.0, 3.0, 4.0], ([0, 0, 1, 0], [2, 0, 1, 2])), shape=(2, 3))
        csr = coo.tocsr()
        csr.sum_duplicates()
        self.assertEqual(spmvc.inspect(coo)["nnz"], csr.nnz)
        self.assertEqual(spmvc.plan(coo).json, spmvc.plan(csr).json)

    def test_scipy_file_and_spec_agree(self):
        # The same matrix through SciPy arrays, a Matrix Market file and the generator.
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "a.mtx"
            scipy.io.mmwrite(str(path), self.a)
            from_file = spmvc.plan(path, precision="f32")
        from_scipy = spmvc.plan(self.a, precision="f32")
        self.assertEqual(from_scipy.json, from_file.json)
        spec = spmvc.inspect("stencil2d:n=40")
        self.assertEqual(spec["nnz"], self.a.nnz)

    def test_load_reads_what_scipy_wrote(self):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "a.mtx"
            scipy.io.mmwrite(str(path), self.a)
            back = spmvc.load(path)
        self.assertEqual(back.shape, self.a.shape)
        self.assertEqual(abs(back - self.a).max(), 0)
        g = spmvc.load("stencil2d:n=40")
        self.assertEqual(abs(g - g.T).max(), 0)  # the 5-point stencil is symmetric
        self.assertEqual(g.nnz, self.a.nnz)

    def test_forced_format_and_params_reach_the_plan_and_kernel(self):
        p = spmvc.plan(self.a, precision="f32", format="csr", params={"T": 8})
        self.assertEqual(p.format, "csr")
        self.assertEqual(p.precision, "f32")
        self.assertIn("8", repr(p))
        self.assertIn("csr", str(p))
        self.assertTrue(p.candidates)
        src = spmvc.generate(self.a, precision="f32", format="csr", params="T=8")
        self.assertTrue(src.kernel_name.startswith("spmv_csr_t8"), src.kernel_name)
        self.assertIn(src.kernel_name, src.text)
        self.assertIn('extern "C"', str(src))

    def test_deterministic_plans_reject_candidates_with_atomics(self):
        g = spmvc.load("rmat:scale=9,ef=8")
        p = spmvc.plan(g, deterministic=True)
        rejected = {c["format"] for c in p.candidates
                    if c["reason"].startswith("deterministic mode: ")}
        self.assertEqual(rejected, {"hyb", "bro_coo", "bro_hyb", "amb"})
        self.assertNotIn(p.format, rejected)
        with self.assertRaises(spmvc.InputError) as e:
            spmvc.plan(g, deterministic=True, format="hyb")
        self.assertIn("floating-point atomics", str(e.exception))

    def test_mixed_precision_states_the_rounding_and_its_bound(self):
        a = self.a.copy()
        a.data = 1.0 + np.sin(0.37 * np.arange(a.nnz)) / 3  # inexact in fp32 and bf16
        p = spmvc.plan(a, mixed_precision="f32")
        self.assertEqual(p.params["values"], 5)  # fp64 values rounded to fp32
        m = p.mixed_precision
        self.assertEqual(m["mode"], "f32")
        self.assertGreater(m["value_error"], 0)
        self.assertLessEqual(m["value_error"], 2.0 ** -24)
        self.assertGreaterEqual(m["y_error_bound"], m["value_error"])
        self.assertIn("mixed precision f32: values stored rounded", str(p))
        b = spmvc.plan(a, precision="f32", mixed_precision="bf16")
        self.assertEqual(b.params["values"], 6)
        self.assertLessEqual(b.mixed_precision["value_error"], 2.0 ** -8)
        self.assertNotIn("mixed_precision", spmvc.plan(a).to_dict())
        with self.assertRaises(spmvc.InputError) as e:
            spmvc.plan(a, mixed_precision="bf16")
        self.assertIn("this operator is f64", str(e.exception))

    def test_mixed_precision_keeps_a_faster_full_precision_plan(self):
        g = "rmat:scale=19,ef=8"  # fp32: cuSPARSE predicted faster than every mixed candidate
        p = spmvc.plan(g, precision="f32", mixed_precision="bf16")
        f = p.mixed_fallback
        self.assertEqual(f["asked"], "bf16")
        self.assertEqual(f["basis"], "model")
        self.assertGreater(f["mixed_seconds"], f["full_seconds"])
        self.assertEqual(p.engine, "cusparse")
        self.assertNotIn("mixed_precision", p.to_dict())
        self.assertIn("full precision kept", str(p))
        q = spmvc.plan(g, precision="f32", mixed_precision="bf16", mixed_fallback=False)
        self.assertNotIn("mixed_fallback", q.to_dict())
        self.assertEqual(q.mixed_precision["mode"], "bf16")
        self.assertEqual(q.engine, "kernel")
        with self.assertRaises(spmvc.InputError) as e:
            spmvc.plan(self.a, mixed_precision="f32", mixed_fallback="no")
        self.assertIn("\"mixed_fallback\" must be true or false", str(e.exception))

    def test_planner_choice_is_its_best_candidate(self):
        p = spmvc.plan(self.a)
        best = p.candidates[0]
        self.assertTrue(best["applicable"])
        self.assertEqual(best["format"], p.format)

    def test_multiplies_reach_the_planner(self):
        # The count passes through the C interface: the plan ranks by one-time cost + N x
        # multiply time and every applicable candidate carries both terms and their total. A
        # grid large enough that a generated kernel is planned (on the 1,600-row one, launch
        # bound, the H100 calibration predicts cuSPARSE faster, and the why names it instead).
        p = spmvc.plan(poisson2d(400), multiplies=10)
        self.assertEqual(p.multiplies, 10)
        self.assertIn("one-time cost + 10 x multiply time", p.why)
        for c in p.candidates:
            if c["applicable"]:
                self.assertAlmostEqual(c["total_seconds"],
                                       c["build_seconds"] + 10 * c["predicted_seconds"])
        self.assertIsNone(spmvc.plan(self.a).multiplies)

    def test_emit_writes_a_harness_for_the_planned_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            out = spmvc.emit(self.a, d, precision="f64")
            names = {pathlib.Path(f).name for f in out["files"]}
            self.assertIn("harness.cu", names)
            self.assertIn("matrix.bin", names)
            self.assertIn(out["kernel"] + ".cu", names)
            for f in out["files"]:
                self.assertTrue(os.path.getsize(f) > 0, f)
            with open(pathlib.Path(d) / "plan.json") as f:
                self.assertEqual(json.load(f)["format"], spmvc.plan(self.a).format)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.a = poisson2d(8)

    def assert_raises_message(self, exc, fragment, fn, *args, **kwargs):
        with self.assertRaises(exc) as cm:
            fn(*args, **kwargs)
        self.assertIn(fragment, str(cm.exception))
        return cm.exception

    def test_misspelt_option_names_the_key(self):
        e = self.assert_raises_message(spmvc.InputError, 'unknown key "precison"', spmvc.plan,
                                       self.a, precison="f32")
        self.assertIsInstance(e, ValueError)
        self.assertIsInstance(e, spmvc.Error)

    def test_unknown_precision_and_format(self):
        self.assert_raises_message(spmvc.InputError, "f16", spmvc.plan, self.a, precision="f16")
        self.assert_raises_message(spmvc.InputError, "jad", spmvc.plan, self.a, format="jad")
        self.assert_raises_message(spmvc.InputError, "planner", spmvc.plan, self.a,
                                   planner="guess")

    def test_compile_checks_options_before_anything(self):
        # Raised before any device work, so also without a GPU, in the library's words.
        self.assert_raises_message(spmvc.InputError, "unknown precision 'f16' (expected",
                                   spmvc.compile, self.a, precision="f16")
        self.assert_raises_message(spmvc.InputError, 'unknown key "reoder"', spmvc.compile,
                                   self.a, reoder="rcm")

    def test_plan_order_is_an_option_the_library_checks(self):
        # Accepted beside a reorder (the plan is the reordered matrix's), refused when not a bool.
        p = spmvc.plan(self.a, reorder="rcm", renumber_columns=True, plan_order=True)
        self.assertTrue(p["reorder"].startswith("rcm"))
        self.assert_raises_message(spmvc.InputError, '"plan_order" must be true or false',
                                   spmvc.compile, self.a, plan_order="yes")

    def test_keep_row_order_moves_the_columns_alone(self):
        # The plan says the columns moved alone; beside plan_order the library refuses it.
        p = spmvc.plan(self.a, reorder="rcm", renumber_columns=True, keep_row_order=True)
        self.assertEqual(p["reorder"], "rcm (columns)")
        self.assert_raises_message(spmvc.InputError, "keep_row_order", spmvc.plan, self.a,
                                   reorder="rcm", renumber_columns=True, keep_row_order=True,
                                   plan_order=True)

    def test_compile_passes_multiplies_to_the_library(self):
        # compile() hands multiplies= to the library, which checks it before any device work.
        self.assert_raises_message(spmvc.InputError, '"multiplies" must be a positive integer',
                                   spmvc.compile, self.a, multiplies=0)
        self.assert_raises_message(spmvc.InputError, '"multiplies" must be a positive integer',
                                   spmvc.plan, self.a, multiplies=-3)

    def test_bad_parameter_is_named(self):
        self.assert_raises_message(spmvc.InputError, "3", spmvc.plan, self.a, format="csr",
                                   params="T=3")

    def test_column_out_of_range(self):
        bad = sp.csr_matrix((np.ones(2), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 3))
        self.assert_raises_message(spmvc.InputError, "col_idx", spmvc.inspect, bad)

    def test_missing_file_and_bad_spec(self):
        self.assert_raises_message(spmvc.InputError, "/nonexistent/A.mtx", spmvc.inspect,
                                   "/nonexistent/A.mtx")
        self.assert_raises_message(spmvc.InputError, "stencil27:n=0", spmvc.inspect,
                                   "stencil27:n=0")

    def test_not_a_matrix(self):
        self.assert_raises_message(spmvc.InputError, "numpy.ndarray", spmvc.inspect, np.eye(3))

    def test_complex_values(self):
        self.assert_raises_message(spmvc.InputError, "complex", spmvc.inspect,
                                   sp.eye(3, dtype=np.complex128, format="csr"))

    def test_compile_without_gpu_says_why(self):
        available, why = spmvc.device_available()
        if available:
            self.skipTest("a GPU is present")
        e = self.assert_raises_message(spmvc.NoDeviceError, why, spmvc.compile, self.a)
        self.assertIsInstance(e, spmvc.DeviceError)
        self.assert_raises_message(spmvc.NoDeviceError, why, spmvc.warm_up, precision="f32")

    def test_library_not_found_names_the_path(self):
        env = dict(os.environ, SPMVC_LIBRARY="/nonexistent/libspmvc.so")
        code = ("import spmvc\n"
                "try:\n    spmvc.version()\n"
                "except spmvc.LibraryNotFoundError as e:\n    print('raised:', e)\n")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        self.assertIn("raised: cannot load the spmvc shared library", out)
        self.assertIn("/nonexistent/libspmvc.so (no such file)", out)


class FakeDeviceArray:
    """Describes device memory through __cuda_array_interface__ as CuPy and Numba do."""

    def __init__(self, shape, typestr="<f8", strides=None, ptr=0x7f0000001000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


class VectorArguments(unittest.TestCase):
    """How operator arguments are read (the multiply itself needs a GPU: gpu_check.py)."""

    def test_device_vector_is_taken_by_pointer(self):
        v = spmvc._arrays.Vector(FakeDeviceArray((10,)), "x")
        v.check(10, np.dtype(np.float64))
        self.assertEqual(v.pointer, 0x7f0000001000)
        self.assertEqual(v.kind, "cuda")
        col = spmvc._arrays.Vector(FakeDeviceArray((10, 1), strides=(8, 8)), "x")
        self.assertTrue(col.column)

    def test_wrong_vectors_are_named(self):
        Vector = spmvc._arrays.Vector
        with self.assertRaisesRegex(spmvc.InputError, "x has 9 elements, the operator needs 10"):
            Vector(FakeDeviceArray((9,)), "x").check(10, np.dtype(np.float64))
        with self.assertRaisesRegex(spmvc.InputError,
                                    "y has dtype float32, the operator's precision needs float64"):
            Vector(FakeDeviceArray((10,), "<f4"), "y").check(10, np.dtype(np.float64))
        with self.assertRaisesRegex(spmvc.InputError, "x is not contiguous"):
            Vector(FakeDeviceArray((10,), strides=(16,)), "x")
        with self.assertRaisesRegex(spmvc.InputError, r"x has shape \(10, 2\)"):
            Vector(FakeDeviceArray((10, 2)), "x")
        with self.assertRaisesRegex(spmvc.InputError, "x is a builtins.list"):
            Vector([1.0, 2.0], "x")

    def test_streams(self):
        class CupyLikeStream:
            ptr = 1234
        self.assertEqual(spmvc._arrays.stream_pointer(CupyLikeStream()), 1234)
        self.assertEqual(spmvc._arrays.stream_pointer(77), 77)
        with self.assertRaisesRegex(spmvc.InputError, "stream must be"):
            spmvc._arrays.stream_pointer("default")

    def test_host_matrices_take_the_host_pipeline(self):
        self.assertIsNone(spmvc._arrays.device_csr(poisson2d(4), "f64"))


class BlockArguments(unittest.TestCase):
    """How apply_many reads a block of k vectors: its layout from its strides."""

    def test_layouts(self):
        Block = spmvc._arrays.Block
        c = Block(np.zeros((10, 3)), "X")
        self.assertEqual((c.layout, c.shape, c.both), ("row", (10, 3), False))
        f = Block(np.zeros((10, 3), order="F"), "X")
        self.assertEqual(f.layout, "col")
        d = Block(FakeDeviceArray((10, 3), strides=(8, 80)), "X")
        self.assertEqual((d.kind, d.layout, d.pointer), ("cuda", "col", 0x7f0000001000))
        self.assertEqual(Block(FakeDeviceArray((10, 3)), "X").layout, "row")
        self.assertTrue(Block(np.zeros((10, 1)), "X").both)

    def test_wrong_blocks_are_named(self):
        Block = spmvc._arrays.Block
        with self.assertRaisesRegex(spmvc.InputError, r"X has shape \(10,\); a block"):
            Block(np.zeros(10), "X")
        with self.assertRaisesRegex(spmvc.InputError, "Y is neither C- nor Fortran-contiguous"):
            Block(np.zeros((10, 6))[:, ::2], "Y")
        with self.assertRaisesRegex(spmvc.InputError, "X is a list"):
            Block([[1.0]], "X")


if __name__ == "__main__":
    unittest.main()
