"""spmvc from Python: compile a sparse matrix into a specialised GPU SpMV operator.

    import scipy.sparse, spmvc
    A = scipy.sparse.random(10000, 10000, density=1e-3, format="csr")
    print(spmvc.inspect(A))                  # what the inspector sees
    print(spmvc.plan(A, precision="f32"))    # what would run, and every alternative (no GPU)
    op = spmvc.compile(A)                    # needs a GPU
    y = op @ x                               # x: CuPy array, PyTorch CUDA tensor (or NumPy)

Matrices: scipy.sparse, cupyx.scipy.sparse, PyTorch sparse CSR/COO tensors, a Matrix Market
file path, or a generator spec ("stencil27:n=64"). Errors raise spmvc.Error subclasses carrying
the library's message: InputError (also a ValueError), NoDeviceError, DeviceError, CompileError.
"""

import ctypes
import json
import os

import numpy as np

from . import _arrays
from ._lib import (CompileError, DeviceError, Error, InputError, InternalError,
                   LibraryNotFoundError, NoDeviceError, TEXT_JSON, TEXT_REPORT)
from . import _lib

__all__ = [
    "compile", "load", "inspect", "plan", "generate", "emit", "device_available", "version",
    "warm_up",
    "Operator", "Plan", "Profile", "Source", "Explanation",
    "Error", "InputError", "NoDeviceError", "DeviceError", "CompileError", "InternalError",
    "LibraryNotFoundError",
]

__version__ = "0.1.0"

# A matrix already on the GPU is built there (compile from device arrays: a few passes over the
# arrays, repaid within tens of multiplies) unless the caller expects at least this many
# multiplies; then its arrays are copied to the host once for the full pipeline (every format,
# orderings), whose picks multiply about 1.5% faster for some 170-190 ms more at 16M nonzeros:
# the library's own threshold for a host matrix (heuristics::kHostPipelineMultiplies64/32, the
# medians over suite v13 on the H200).
HOST_PIPELINE_MULTIPLIES = {"f64": 1_800_000, "f32": 550_000, "f32acc64": 550_000}

# The formats built from device arrays on the GPU (compiler/planner/device_plan.cpp).
_DEVICE_FORMATS = ("auto", "csr", "csr_stream", "ell", "sell", "hyb", "bro_ell", "bro_coo", "bro_hyb",
                   "bcsr", "bellpack", "dia")


def version():
    """The library's version."""
    return _lib.version()


def device_available():
    """(True, "") when a CUDA device is usable, else (False, the reason)."""
    return _lib.device_available()


def warm_up(precision="f64", **options):
    """Gets ready what the process's first compile() would otherwise get inside its own time:
    the CUDA context, the pinned buffers and host threads that upload a host matrix, and the GPU
    build's kernels. Blocking (about 0.2 s where it creates the context): run it on a thread of
    your own (threading.Thread(target=spmvc.warm_up).start()) while the matrix is read, and the
    first compile() starts as a later one would (on an H200, a 16.8M-nonzero matrix from the
    host: its first multiply 9.4-10.4 ms fp64 after compile() against 13.0-13.4 without). Takes
    compile()'s options; never required. Raises NoDeviceError without a GPU."""
    _lib.call("spmvc_warm_up", _options_json(precision=precision, **options))


def _options_json(precision="f64", planner="model", format="auto", params=None, reorder="none",
                  **more):
    options = {"precision": precision, "planner": planner, "format": format, "reorder": reorder}
    if params:
        if isinstance(params, dict):
            params = ",".join(f"{k}={int(v) if isinstance(v, bool) else v}"
                              for k, v in params.items())
        options["params"] = str(params)
    options.update(more)  # checked by the library: an unknown key is an InputError naming it
    return json.dumps(options).encode()


class _HostMatrix:
    """A spmvc_matrix handle for the duration of a with-block."""

    def __init__(self, a):
        self.handle = ctypes.c_void_p()
        if _arrays.is_path_or_spec(a):
            text = str(a)
            if not os.path.exists(text) and ":" in text:
                _lib.call("spmvc_matrix_generate", text.encode(), ctypes.byref(self.handle))
            else:
                _lib.call("spmvc_matrix_read", text.encode(), ctypes.byref(self.handle))
            return
        m = _arrays.host_csr(a)
        as_ptr = np.ctypeslib.as_ctypes_type
        _lib.call("spmvc_matrix_from_csr", m.nrows, m.ncols, len(m.indices),
                  m.indptr.ctypes.data_as(ctypes.POINTER(as_ptr(np.int64))),
                  m.indices.ctypes.data_as(ctypes.POINTER(as_ptr(np.int32))),
                  m.data.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                  ctypes.byref(self.handle))

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        _lib.library().spmvc_matrix_destroy(self.handle)
        self.handle = None


def _text(name, *args):
    out = _lib.text_out()
    _lib.call(name, *args, ctypes.byref(out))
    return _lib.take_text(out)


class _Document:
    """A JSON document with its readable report: str() is the report, .json the text,
    .to_dict() the parsed document, and keys read as items or attributes."""

    def __init__(self, json_text, report):
        self.json = json_text
        self._doc = json.loads(json_text)
        self.report = report

    def to_dict(self):
        return json.loads(self.json)

    def __getitem__(self, key):
        return self._doc[key]

    def __getattr__(self, key):
        doc = self.__dict__.get("_doc", {})
        if key in doc:
            return doc[key]
        raise AttributeError(key)

    def keys(self):
        return self._doc.keys()

    def __str__(self):
        return self.report


class Profile(_Document):
    """What the inspector sees in a matrix: sizes, row lengths, bandwidth, delta bit widths,
    block fill, distinct values, symmetry (`spmvc inspect`)."""

    def __repr__(self):
        d = self._doc
        return f"<spmvc.Profile {d.get('nrows')}x{d.get('ncols')}, {d.get('nnz')} nonzeros>"


class Plan(_Document):
    """What the planner chose (format, params, precision, reorder, why) and every candidate it
    considered with its predicted time or the reason it was rejected (`spmvc plan`)."""

    def __repr__(self):
        d = self._doc
        params = ",".join(f"{k}={v}" for k, v in d.get("params", {}).items())
        return f"<spmvc.Plan {d.get('format')} [{params}] {d.get('precision')}>"


class Source:
    """The generated CUDA translation unit: str() is the text."""

    def __init__(self, text, kernel_name):
        self.text = text
        self.kernel_name = kernel_name

    def save(self, path):
        with open(path, "w") as f:
            f.write(self.text)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<spmvc.Source {self.kernel_name}, {self.text.count(chr(10))} lines>"


class Explanation:
    """Why this operator runs what it runs: the plan with its alternatives, the kernel, its
    registers and spills, the bytes the matrix takes on the device, and the one-time costs."""

    def __init__(self, op):
        self.plan = op.plan
        self.timings = op.timings
        self.path = op.path
        self.copied = op.copied

    def to_dict(self):
        return {"plan": self.plan.to_dict(), "timings": self.timings, "path": self.path,
                "copied": list(self.copied)}

    def __str__(self):
        t = self.timings
        seconds = t["seconds"]
        one_time = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in seconds.items() if v > 0)
        lines = [
            str(self.plan).rstrip(),
            f"kernel: {t['kernel_name']} (from {t['kernel_origin']}), {t['registers']} registers"
            f", {t['spill_bytes']} bytes spilled",
            f"device memory for the matrix: {t['device_bytes']:,} bytes"
            f" ({t['read_bytes']:,} read a multiply)",
            f"built from {'device arrays on the GPU' if self.path == 'device' else 'host arrays'}"
            + (f" (converted on the device: {', '.join(self.copied)})" if self.copied else ""),
            f"one-time cost: {one_time or 'none measured'}",
        ]
        if t.get("early_launches", 0) > 0:
            lines.append(f"launches: {t['early_launches'] + 1} a multiply, each after the first "
                         "started before the previous one ends")
        if t.get("cache_note"):
            lines.append(f"kernel cache: {t['cache_note']}")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return f"<spmvc.Explanation {self.timings['kernel_name']}>"


def load(source):
    """A Matrix Market file (.mtx, .mtx.gz, .mtx.xz) or generator spec ("rmat:scale=16,ef=8") as
    a scipy.sparse.csr_matrix, read by spmvc's own reader (symmetric files expanded)."""
    import scipy.sparse
    with _HostMatrix(source) as m:
        nrows, ncols, nnz = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        _lib.call("spmvc_matrix_shape", m, ctypes.byref(nrows), ctypes.byref(ncols),
                  ctypes.byref(nnz))
        indptr = np.empty(nrows.value + 1, dtype=np.int64)
        indices = np.empty(nnz.value, dtype=np.int32)
        data = np.empty(nnz.value, dtype=np.float64)
        _lib.call("spmvc_matrix_arrays", m,
                  indptr.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                  indices.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                  data.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    if nnz.value < 2**31:
        indptr = indptr.astype(np.int32)
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(nrows.value, ncols.value))


def inspect(a):
    """The inspector's Profile of `a` (device matrices are copied to the host)."""
    with _HostMatrix(a) as m:
        return Profile(_text("spmvc_inspect", m, TEXT_JSON), _text("spmvc_inspect", m, TEXT_REPORT))


def plan(a, **options):
    """The Plan compile() would choose for `a` on the host pipeline (no GPU needed). Options as
    compile()'s."""
    opts = _options_json(**options)
    with _HostMatrix(a) as m:
        return Plan(_text("spmvc_plan", m, opts, TEXT_JSON),
                    _text("spmvc_plan", m, opts, TEXT_REPORT))


def generate(a, **options):
    """The generated kernel Source compile() would build on the host pipeline (no GPU needed)."""
    opts = _options_json(**options)
    with _HostMatrix(a) as m:
        source, name = _lib.text_out(), _lib.text_out()
        _lib.call("spmvc_generate", m, opts, ctypes.byref(source), ctypes.byref(name))
        return Source(_lib.take_text(source), _lib.take_text(name))


def emit(a, directory, **options):
    """`spmvc emit`: writes the kernel, its templates, the encoded matrix and a harness that
    builds with plain nvcc into `directory`. Returns {"kernel": name, "files": [paths]}."""
    opts = _options_json(**options)
    with _HostMatrix(a) as m:
        return json.loads(_text("spmvc_emit", m, opts, str(directory).encode()))


def compile(a, precision="f64", planner="model", multiplies=None, **options):
    """Compiles `a` into an Operator for y = alpha*A*x + beta*y on the GPU.

    precision: "f64", "f32" or "f32acc64" (fp32 storage and vectors, fp64 accumulation).
    planner: "model" (the cost model's pick) or "measure" (time the best candidates).
    multiplies: how many multiplies the caller expects (a positive integer). The planner then
        picks the least one-time cost + multiplies x multiply time (unset: multiply time alone;
        plan(A, multiplies=N) shows both terms). A CuPy or PyTorch matrix on the GPU is built
        there from its own arrays, without a copy (csr, csr_stream, ell, sell, hyb or a BRO
        format), unless this is at least HOST_PIPELINE_MULTIPLIES[precision] or an option asks
        for what only the host pipeline does (planner "measure", a reorder, another format,
        params, mixed precision); then it is copied to the host once.
        Host matrices go through the library's compile(CsrMatrix): uploaded once and built on the
        GPU (build "auto"), or by the host pipeline under the same conditions.
    options: format ("auto" or a name), params ("T=8,V=2" or a dict), reorder, renumber_columns,
        keep_row_order (with renumber_columns, the columns move alone: y written in place),
        value_coding, deterministic, mixed_precision ("f32": an f64 operator's values stored
        rounded to fp32; "bf16": an f32 operator's rounded to bf16; the plan states the rounding
        error and its bound on y; a device matrix is then copied to the host pipeline),
        mixed_fallback (default True: with mixed_precision, a full-precision plan predicted or
        measured faster is kept, and plan.mixed_fallback says so; False insists on the rounded
        values), tiered,
        plan_order (with a reorder, x and y in the plan's order: Operator.to_plan_order),
        full_inspection, disk_cache, cache_dir, device, cached_kernels, keep_csr (keep a plain
        CSR copy on the GPU for apply_transpose, and for apply_many on formats without an SpMM
        kernel; a matrix built from device arrays always has one).
    """
    return Operator._compile(a, precision, planner, multiplies, options)


def _axis_code(axis):
    if axis == "rows":
        return 0
    if axis == "columns":
        return 1
    raise InputError(f"axis must be \"rows\" or \"columns\", got {axis!r}")


class Operator:
    """A compiled SpMV: `op @ x`, `op.apply(x, y, alpha, beta)`, and `op.plan`, `op.source`,
    `op.explain()`. Also a LinearOperator for cupyx.scipy.sparse.linalg (shape, dtype, matvec;
    `op.as_linear_operator()`)."""

    def __init__(self):
        raise TypeError("use spmvc.compile(A)")

    @classmethod
    def _compile(cls, a, precision, planner, multiplies, options):
        if multiplies is not None:
            options = dict(options, multiplies=multiplies)  # the planner's horizon, checked there
        opts = _options_json(precision=precision, planner=planner, **options)
        _lib.call("spmvc_options_check", opts)  # option errors first, in the library's words
        self = object.__new__(cls)
        self._handle = ctypes.c_void_p()
        self._keep = None
        self.copied = []
        self.last_apply = None
        self.dtype = _arrays.value_dtype(precision)
        self.precision = precision
        host_only = (planner != "model" or options.get("reorder", "none") != "none" or
                     options.get("format", "auto") not in _DEVICE_FORMATS or
                     options.get("params") or
                     options.get("mixed_precision", "off") != "off")
        many = multiplies is not None and multiplies >= HOST_PIPELINE_MULTIPLIES[precision]
        device = None if (host_only or many) else _arrays.device_csr(a, precision)
        if device is not None:
            _lib.call("spmvc_compile_device_csr", device.nrows, device.ncols, device.nnz,
                      device.row_ptr, device.col_idx, device.values, opts,
                      ctypes.byref(self._handle))
            self._keep = device.keep  # read by every multiply
            self.copied = device.copied
            self.path = "device"
        else:
            with _HostMatrix(a) as m:
                _lib.call("spmvc_compile", m, opts, ctypes.byref(self._handle))
            self.path = "host"
        nrows, ncols = ctypes.c_int64(), ctypes.c_int64()
        _lib.call("spmvc_operator_shape", self._handle, ctypes.byref(nrows), ctypes.byref(ncols))
        self.shape = (nrows.value, ncols.value)
        return self

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            try:
                _lib.library().spmvc_operator_destroy(handle)
            except Exception:
                pass
            self._handle = None

    @property
    def nrows(self):
        return self.shape[0]

    @property
    def ncols(self):
        return self.shape[1]

    def apply(self, x, y=None, alpha=1.0, beta=0.0, stream=None):
        """y = alpha*A*x + beta*y, in place in `y` (a new vector where x lives when y is None),
        on `stream` (default: the current stream of x's library). Returns y. Device vectors are
        read and written where they are; NumPy vectors go through the host copy path."""
        y, xv, yv, s = self._multiply("spmvc_operator_apply", self.ncols, self.nrows, x, y,
                                      alpha, beta, stream)
        if xv.kind != "numpy":
            self.last_apply = {"x": xv.pointer, "y": yv.pointer, "stream": s}
        return y

    def _multiply(self, function, n_in, n_out, x, y, alpha, beta, stream):
        """One vector in (n_in elements), one out (n_out): `function` on device vectors, or its
        `_host` twin on NumPy ones. Returns (y, x's and y's Vector, the stream used or None)."""
        xv = _arrays.Vector(x, "x")
        xv.check(n_in, self.dtype)
        if y is None:
            if beta != 0:
                raise InputError("beta is not 0 but no y was given")
            y = _arrays.empty_like_vector(xv, n_out, self.dtype)
        yv = _arrays.Vector(y, "y")
        yv.check(n_out, self.dtype)
        if (xv.kind == "numpy") != (yv.kind == "numpy"):
            raise InputError("x and y must both be on the host (NumPy) or both on the device")
        if xv.kind == "numpy":
            if yv.dtype != np.float64 or not yv.obj.flags.writeable:
                raise InputError("a host y must be a writable float64 NumPy array")
            xh = np.ascontiguousarray(x, dtype=np.float64)
            ptr = ctypes.POINTER(ctypes.c_double)
            _lib.call(function + "_host", self._handle, xh.ctypes.data_as(ptr),
                      y.ctypes.data_as(ptr), float(alpha), float(beta))
            return y, xv, yv, None
        s = _arrays.stream_pointer(stream)
        if s is None:
            s = _arrays.current_stream(xv)
        _lib.call(function, self._handle, xv.pointer, yv.pointer, float(alpha), float(beta),
                  s or None)
        return y, xv, yv, s

    def update_values(self, values):
        """New values for the same pattern, in the CSR order of the matrix compiled (for a SciPy,
        CuPy or PyTorch CSR matrix: its `data`). A NumPy array goes through the host; a device
        array (CuPy, PyTorch, __cuda_array_interface__) of the operator's dtype is read on the
        GPU, and an operator built from device arrays then reads it in place (it is kept
        alive here). Returns {"replanned": bool, "why": str}: replanned when the values did not
        fit the plan's value coding and the operator was planned again. Synchronous."""
        replanned, why = ctypes.c_int(0), _lib.text_out()
        if isinstance(values, np.ndarray):
            v = np.ascontiguousarray(values, dtype=np.float64).ravel()
            _lib.call("spmvc_operator_update_values", self._handle,
                      v.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), v.size,
                      ctypes.byref(replanned), ctypes.byref(why))
        else:
            vv = _arrays.Vector(values, "values")
            vv.check(vv.length, self.dtype)
            _lib.call("spmvc_operator_update_values_device", self._handle, vv.pointer,
                      ctypes.byref(replanned), ctypes.byref(why))
            if self.path == "device":
                self._keep = (self._keep, values)  # read by every multiply from now on
        return {"replanned": bool(replanned.value), "why": _lib.take_text(why) or ""}

    def __matmul__(self, x):
        return self.apply(x)

    def apply_many(self, x, y=None, alpha=1.0, beta=0.0, stream=None):
        """Y = alpha*A*X + beta*Y for an (ncols, k) block X of k vectors (1..64) at once, in
        place in `y` (a new block in X's layout where X lives when y is None). X and Y are both
        C-ordered (row-major) or both Fortran-ordered (column-major). Returns y."""
        xb = _arrays.Block(x, "X")
        k = xb.shape[1]
        if xb.shape[0] != self.ncols:
            raise InputError(f"X has {xb.shape[0]} rows, the operator needs {self.ncols}")
        if y is None:
            if beta != 0:
                raise InputError("beta is not 0 but no Y was given")
            order = "C" if xb.layout == "row" else "F"
            if xb.kind == "numpy":
                y = np.empty((self.nrows, k), dtype=np.float64, order=order)
            elif xb.kind == "torch":
                torch = _arrays._torch()
                y = torch.empty((self.nrows, k), dtype=x.dtype, device=x.device)
                if order == "F":
                    y = torch.empty((k, self.nrows), dtype=x.dtype, device=x.device).t()
            else:
                import cupy
                y = cupy.empty((self.nrows, k), dtype=self.dtype, order=order)
        yb = _arrays.Block(y, "Y")
        if yb.shape != (self.nrows, k):
            raise InputError(f"Y has shape {yb.shape}, the operator needs {(self.nrows, k)}")
        layout = xb.layout if not xb.both else yb.layout
        if not yb.both and yb.layout != layout:
            raise InputError("X and Y must have the same layout (both C- or both Fortran-ordered)")
        code = 0 if layout == "row" else 1
        if (xb.kind == "numpy") != (yb.kind == "numpy"):
            raise InputError("X and Y must both be on the host (NumPy) or both on the device")
        if xb.kind == "numpy":
            if yb.dtype != np.float64 or not y.flags.writeable:
                raise InputError("a host Y must be a writable float64 NumPy array")
            order = "C" if layout == "row" else "F"
            xh = np.asarray(x, dtype=np.float64, order=order)
            ptr = ctypes.POINTER(ctypes.c_double)
            _lib.call("spmvc_operator_apply_many_host", self._handle, xh.ctypes.data_as(ptr),
                      y.ctypes.data_as(ptr), k, code, float(alpha), float(beta))
            return y
        for b in (xb, yb):
            if b.dtype != self.dtype:
                raise InputError(f"{b.name} has dtype {b.dtype}, the operator's precision "
                                 f"needs {self.dtype}")
        s = _arrays.stream_pointer(stream)
        if s is None:
            s = _arrays.current_stream(xb)
        _lib.call("spmvc_operator_apply_many", self._handle, xb.pointer, yb.pointer, k, code,
                  float(alpha), float(beta), s or None)
        return y

    def apply_transpose(self, x, y=None, alpha=1.0, beta=0.0, stream=None):
        """y = alpha*A^T*x + beta*y (x has nrows elements, y ncols), as apply() takes them.
        The first call builds A^T on the GPU; an operator compiled from a host matrix needs
        compile(..., keep_csr=True) for it. Returns y."""
        return self._multiply("spmvc_operator_apply_transpose", self.nrows, self.ncols, x, y,
                              alpha, beta, stream)[0]

    @property
    def plan_order(self):
        """True when apply() takes x and gives y in the plan's order: compiled with
        plan_order=True and a reorder (an ordering, or "auto" choosing one). The multiply then
        skips the gather of x into that order and the writes of y through the row map; a method
        that keeps its vectors in one order (power iteration, PageRank, CG) permutes them once,
        with to_plan_order and from_plan_order."""
        on = ctypes.c_int(0)
        _lib.call("spmvc_operator_plan_order", self._handle, ctypes.byref(on))
        return bool(on.value)

    def plan_map(self, axis="columns"):
        """The order apply() uses on `axis` ("columns": x, "rows": y): the plan's element i is
        the caller's element plan_map(axis)[i] (a NumPy int32 copy); None where it is the
        caller's order."""
        data, n = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_int64(0)
        _lib.call("spmvc_operator_plan_map", self._handle, _axis_code(axis), ctypes.byref(data),
                  ctypes.byref(n))
        if n.value == 0:
            return None
        return np.ctypeslib.as_array(data, shape=(n.value,)).copy()

    def to_plan_order(self, v, out=None, axis="columns", stream=None):
        """v (in the caller's order, on `axis`) permuted into the order apply() uses:
        out[i] = v[plan_map(axis)[i]]; a copy where the orders agree. Device vectors are
        permuted on the GPU, on `stream`; NumPy ones on the host. Returns out."""
        return self._permute("spmvc_operator_to_plan_order", v, out, axis, stream, False)

    def from_plan_order(self, v, out=None, axis="rows", stream=None):
        """The inverse of to_plan_order: out[plan_map(axis)[i]] = v[i] (y back in the caller's
        order, by default). Returns out."""
        return self._permute("spmvc_operator_from_plan_order", v, out, axis, stream, True)

    def _permute(self, function, v, out, axis, stream, scatter):
        code = _axis_code(axis)
        n = self.ncols if code == 1 else self.nrows
        vv = _arrays.Vector(v, "v")
        vv.check(n, self.dtype)
        if vv.kind == "numpy":
            m = self.plan_map(axis)
            src = np.asarray(v, dtype=np.float64).reshape(-1)
            if m is None:
                result = src.copy()
            elif scatter:
                result = np.empty_like(src)
                result[m] = src
            else:
                result = src[m]
            if out is None:
                return result.reshape(np.shape(v))
            np.copyto(out, result.reshape(np.shape(out)))
            return out
        if out is None:
            out = _arrays.empty_like_vector(vv, n, self.dtype)
        ov = _arrays.Vector(out, "out")
        ov.check(n, self.dtype)
        if ov.kind == "numpy":
            raise InputError("v and out must both be on the host (NumPy) or both on the device")
        s = _arrays.stream_pointer(stream)
        if s is None:
            s = _arrays.current_stream(vv)
        _lib.call(function, self._handle, vv.pointer, ov.pointer, code, s or None)
        return out

    def matvec(self, x):
        """op @ x for solvers: a strided x (a column of a Fortran-ordered basis, say) is made
        contiguous first, where apply() would refuse it."""
        if _arrays.is_torch_tensor(x):
            x = x.contiguous()
        elif type(x).__module__.split(".")[0] == "cupy" and not x.flags.c_contiguous:
            import cupy
            x = cupy.ascontiguousarray(x)
        return self.apply(x)

    def as_linear_operator(self):
        """A cupyx.scipy.sparse.linalg.LinearOperator multiplying with this operator (for cg,
        gmres, ...)."""
        from cupyx.scipy.sparse.linalg import LinearOperator
        return LinearOperator(self.shape, matvec=self.matvec, dtype=self.dtype)

    @property
    def plan(self):
        return Plan(_text("spmvc_operator_plan", self._handle, TEXT_JSON),
                    _text("spmvc_operator_plan", self._handle, TEXT_REPORT))

    @property
    def source(self):
        source, name = _lib.text_out(), _lib.text_out()
        _lib.call("spmvc_operator_source", self._handle, ctypes.byref(source), ctypes.byref(name))
        return Source(_lib.take_text(source), _lib.take_text(name))

    @property
    def timings(self):
        """One-time costs by step (seconds), kernel origin, registers, spills, device bytes."""
        return json.loads(_text("spmvc_operator_timings", self._handle))

    def explain(self):
        return Explanation(self)

    def __repr__(self):
        p = self.plan
        return (f"<spmvc.Operator {self.nrows}x{self.ncols} {p['format']} {p['precision']}, "
                f"built from {self.path} arrays>")
