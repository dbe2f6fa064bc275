"""What the package takes: sparse matrices (SciPy, CuPy, PyTorch, a file or generator spec) and
dense vectors (NumPy on the host; CuPy, PyTorch or anything with __cuda_array_interface__ or
DLPack on the device). Device arrays are described by pointer, never copied."""

import os
import sys

import numpy as np

from ._lib import InputError

_DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32),
           "f32acc64": np.dtype(np.float32)}


def value_dtype(precision):
    try:
        return _DTYPES[precision]
    except KeyError:
        raise InputError(f"unknown precision '{precision}' (f64, f32 or f32acc64)") from None


def _module_of(obj):
    return type(obj).__module__.split(".")[0]


def _torch():
    return sys.modules.get("torch")


def is_torch_tensor(obj):
    torch = _torch()
    return torch is not None and isinstance(obj, torch.Tensor)


def is_cupy_sparse(obj):
    if "cupyx" not in sys.modules:
        return False
    import cupyx.scipy.sparse as cs
    return cs.issparse(obj)


def is_scipy_sparse(obj):
    if "scipy" not in sys.modules and "scipy.sparse" not in sys.modules:
        return False
    import scipy.sparse as ss
    return ss.issparse(obj)


def is_torch_sparse(obj):
    torch = _torch()
    return (torch is not None and isinstance(obj, torch.Tensor) and
            obj.layout in (torch.sparse_csr, torch.sparse_coo))


class HostCsr:
    """CSR arrays on the host in the C interface's types (int64 offsets, int32 columns, fp64)."""

    def __init__(self, nrows, ncols, indptr, indices, data):
        self.nrows, self.ncols = int(nrows), int(ncols)
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        if len(indices) and (indices.min() < np.iinfo(np.int32).min or
                             indices.max() > np.iinfo(np.int32).max):
            raise InputError("column indices do not fit in 32 bits")
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        if np.iscomplexobj(data):
            raise InputError("complex values are not supported (real fp64 or fp32 only)")
        self.data = np.ascontiguousarray(data, dtype=np.float64)


def host_csr(a):
    """HostCsr of any supported sparse matrix (device ones copied to the host)."""
    if is_scipy_sparse(a):
        m = a.tocsr()
        return HostCsr(m.shape[0], m.shape[1], m.indptr, m.indices, m.data)
    if is_cupy_sparse(a):
        m = a.tocsr()
        return HostCsr(m.shape[0], m.shape[1], m.indptr.get(), m.indices.get(), m.data.get())
    if is_torch_sparse(a):
        torch = _torch()
        m = a if a.layout == torch.sparse_csr else a.coalesce().to_sparse_csr()
        return HostCsr(m.shape[0], m.shape[1], m.crow_indices().cpu().numpy(),
                       m.col_indices().cpu().numpy(), m.values().detach().cpu().numpy())
    raise InputError(
        f"cannot take a {type(a).__module__}.{type(a).__name__} as a matrix: give a scipy.sparse "
        "matrix, a cupyx.scipy.sparse matrix, a torch sparse CSR (or COO) tensor, a Matrix "
        "Market file path or a generator spec such as 'stencil27:n=64'")


def is_path_or_spec(a):
    return isinstance(a, (str, os.PathLike))


class DeviceCsr:
    """CSR arrays in device memory: int32 offsets and columns, values of the precision's type.
    `keep` holds the arrays the pointers point into (the caller's where no conversion was
    needed): the operator reads them in every multiply."""

    def __init__(self, nrows, ncols, nnz, indptr, indices, data, copied):
        self.nrows, self.ncols, self.nnz = int(nrows), int(ncols), int(nnz)
        self.keep = (indptr, indices, data)
        self.row_ptr = device_pointer(indptr)
        self.col_idx = device_pointer(indices)
        self.values = device_pointer(data)
        self.copied = copied  # names of the arrays converted (copied) on the device


def device_csr(a, precision):
    """DeviceCsr of a CuPy or PyTorch sparse matrix on the GPU; None for anything else."""
    dtype = value_dtype(precision)
    if is_cupy_sparse(a):
        import cupy
        m = a if a.format == "csr" else a.tocsr()
        copied = [] if m is a else ["format"]
        parts = []
        for name, arr, want in (("indptr", m.indptr, np.int32), ("indices", m.indices, np.int32),
                                ("data", m.data, dtype)):
            if arr.dtype != want or not arr.flags.c_contiguous:
                arr = cupy.ascontiguousarray(arr, dtype=want)
                copied.append(name)
            parts.append(arr)
        return DeviceCsr(m.shape[0], m.shape[1], m.nnz, *parts, copied)
    if is_torch_sparse(a) and a.is_cuda:
        torch = _torch()
        m = a if a.layout == torch.sparse_csr else a.coalesce().to_sparse_csr()
        copied = [] if m is a else ["layout"]
        want_value = torch.float64 if dtype == np.float64 else torch.float32
        parts = []
        for name, arr, want in (("crow_indices", m.crow_indices(), torch.int32),
                                ("col_indices", m.col_indices(), torch.int32),
                                ("values", m.values().detach(), want_value)):
            if arr.dtype != want or not arr.is_contiguous():
                arr = arr.to(want).contiguous()
                copied.append(name)
            parts.append(arr)
        return DeviceCsr(m.shape[0], m.shape[1], m._nnz(), *parts, copied)
    return None


def device_pointer(arr):
    """The device address of a CuPy array or a PyTorch CUDA tensor (or anything with
    __cuda_array_interface__)."""
    if is_torch_tensor(arr):
        return arr.data_ptr()
    return arr.__cuda_array_interface__["data"][0]


class Vector:
    """A dense vector argument: where it lives, its address, length and type."""

    def __init__(self, obj, name):
        self.obj = obj
        self.name = name
        self.kind = None  # "numpy", "cupy", "torch" or "cuda" (any __cuda_array_interface__)
        self.column = False  # given as an (n, 1) array
        if isinstance(obj, np.ndarray):
            self.kind = "numpy"
            shape, self.dtype = obj.shape, obj.dtype
            contiguous = obj.flags.c_contiguous
            self.pointer = None
        elif is_torch_tensor(obj):
            if not obj.is_cuda:
                raise InputError(f"{name} is a PyTorch tensor on {obj.device}; give a CUDA "
                                 "tensor (or a NumPy array for the host path)")
            self.kind = "torch"
            shape = tuple(obj.shape)
            try:
                self.dtype = np.dtype(str(obj.dtype).replace("torch.", ""))
            except TypeError:
                raise InputError(f"{name} has dtype {obj.dtype}; the operator takes float64 "
                                 "(f64) or float32 (f32, f32acc64)") from None
            contiguous = obj.is_contiguous()
            self.pointer = obj.data_ptr()
            self.device = obj.device.index
        else:
            cai = getattr(obj, "__cuda_array_interface__", None)
            if cai is None and hasattr(obj, "__dlpack__"):
                import cupy
                obj = cupy.from_dlpack(obj)  # a view: same memory, no copy
                self.obj = obj
                cai = obj.__cuda_array_interface__
            if cai is None:
                raise InputError(
                    f"{name} is a {type(obj).__module__}.{type(obj).__name__}: give a CuPy "
                    "array, a PyTorch CUDA tensor, any array with __cuda_array_interface__ or "
                    "DLPack, or a NumPy array")
            self.kind = "cupy" if _module_of(obj) == "cupy" else "cuda"
            shape = tuple(cai["shape"])
            self.dtype = np.dtype(cai["typestr"])
            strides = cai.get("strides")
            contiguous = strides is None or strides[0] == self.dtype.itemsize or shape[0] <= 1
            self.pointer = cai["data"][0]
            self.device = getattr(getattr(obj, "device", None), "id", None)
        if len(shape) == 2 and shape[1] == 1:
            self.column = True
        elif len(shape) != 1:
            raise InputError(f"{name} has shape {shape}; a vector is (n,) or (n, 1)")
        self.length = int(shape[0])
        if not contiguous:
            raise InputError(f"{name} is not contiguous; give a contiguous vector (the kernel "
                             "reads it in place)")

    def check(self, length, dtype):
        if self.length != length:
            raise InputError(f"{self.name} has {self.length} elements, the operator needs "
                             f"{length}")
        if self.kind != "numpy" and self.dtype != dtype:
            raise InputError(f"{self.name} has dtype {self.dtype}, the operator's precision "
                             f"needs {dtype}")


def current_stream(vector):
    """The caller's current stream for the library the vector comes from (0: default)."""
    if vector.kind == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    if vector.kind == "torch":
        return _torch().cuda.current_stream(vector.obj.device).cuda_stream
    return 0


def stream_pointer(stream):
    """A cudaStream_t from an int, a CuPy stream (.ptr) or a PyTorch stream (.cuda_stream)."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise InputError(f"stream must be an int, a CuPy stream or a PyTorch stream, got "
                     f"{type(stream).__name__}")


def empty_like_vector(vector, length, dtype):
    """A new vector of `length` where `vector` lives."""
    shape = (length, 1) if vector.column else (length,)
    if vector.kind == "torch":
        torch = _torch()
        return torch.empty(shape, dtype=getattr(torch, dtype.name), device=vector.obj.device)
    if vector.kind == "numpy":
        return np.empty(shape, dtype=np.float64)
    import cupy
    return cupy.empty(shape, dtype=dtype)


class Block:
    """A dense (n, k) block of vectors for apply_many: where it lives, its address, shape, type
    and layout ("row" for C order, "col" for Fortran order; a contiguous (n, 1) block is both)."""

    def __init__(self, obj, name):
        self.obj = obj
        self.name = name
        if isinstance(obj, np.ndarray):
            self.kind = "numpy"
            shape, self.dtype = obj.shape, obj.dtype
            c, f = obj.flags.c_contiguous, obj.flags.f_contiguous
            self.pointer = None
        elif is_torch_tensor(obj):
            if not obj.is_cuda:
                raise InputError(f"{name} is a PyTorch tensor on {obj.device}; give a CUDA "
                                 "tensor (or a NumPy array for the host path)")
            self.kind = "torch"
            shape = tuple(obj.shape)
            self.dtype = np.dtype(str(obj.dtype).replace("torch.", ""))
            c = obj.is_contiguous()
            f = len(shape) == 2 and obj.t().is_contiguous()
            self.pointer = obj.data_ptr()
        else:
            cai = getattr(obj, "__cuda_array_interface__", None)
            if cai is None:
                raise InputError(f"{name} is a {type(obj).__name__}: give a NumPy array, a "
                                 "CuPy array, a PyTorch CUDA tensor or any array with "
                                 "__cuda_array_interface__")
            self.kind = "cupy" if _module_of(obj) == "cupy" else "cuda"
            shape = tuple(cai["shape"])
            self.dtype = np.dtype(cai["typestr"])
            strides = cai.get("strides")
            item = self.dtype.itemsize
            c = strides is None or (len(shape) == 2 and strides == (shape[1] * item, item))
            f = len(shape) == 2 and strides is not None and strides == (item, shape[0] * item)
            self.pointer = cai["data"][0]
        if len(shape) != 2:
            raise InputError(f"{name} has shape {shape}; a block of k vectors is (n, k)")
        self.shape = (int(shape[0]), int(shape[1]))
        if not (c or f):
            raise InputError(f"{name} is neither C- nor Fortran-contiguous; the kernel reads "
                             "it in place")
        self.layout = "row" if c else "col"
        self.both = c and f
