"""ctypes binding of the C interface (include/spmvc/spmvc.h) and its errors as exceptions.

The shared library is the file $SPMVC_LIBRARY names when set; otherwise the copy bundled into
the package at install time (spmvc/_native/), else libspmvc.so on the loader's path
(LD_LIBRARY_PATH, or an installed prefix the loader knows).
"""

import ctypes
import os
import pathlib

_LIBRARY_NAME = "libspmvc.so"

# Status codes of spmvc.h.
_OK = 0
_INPUT = 1
_NO_DEVICE = 2
_DEVICE = 3
_COMPILE = 4
_INTERNAL = 5
_MEMORY = 6

TEXT_JSON = 0
TEXT_REPORT = 1


class Error(Exception):
    """Base of every spmvc error. The message is the library's."""

    status = "SPMVC_ERROR"


class InputError(Error, ValueError):
    """Bad input: a matrix, array, option or file spmvc cannot take, and why."""

    status = "SPMVC_ERROR_INPUT"


class DeviceError(Error, RuntimeError):
    """A CUDA or driver call failed."""

    status = "SPMVC_ERROR_DEVICE"


class NoDeviceError(DeviceError):
    """No CUDA device or driver on this machine."""

    status = "SPMVC_ERROR_NO_DEVICE"


class CompileError(Error, RuntimeError):
    """NVRTC rejected a generated kernel (the message carries its log)."""

    status = "SPMVC_ERROR_COMPILE"


class InternalError(Error, RuntimeError):
    """A bug in spmvc."""

    status = "SPMVC_ERROR_INTERNAL"


class LibraryNotFoundError(Error, ImportError):
    """libspmvc.so could not be loaded."""

    status = "SPMVC_LIBRARY_NOT_FOUND"


_EXCEPTIONS = {
    _INPUT: InputError,
    _NO_DEVICE: NoDeviceError,
    _DEVICE: DeviceError,
    _COMPILE: CompileError,
    _INTERNAL: InternalError,
    _MEMORY: MemoryError,
}

_c_char_pp = ctypes.POINTER(ctypes.c_char_p)
_i64 = ctypes.c_int64
_i64_p = ctypes.POINTER(ctypes.c_int64)
_i32_p = ctypes.POINTER(ctypes.c_int32)
_f64_p = ctypes.POINTER(ctypes.c_double)
_handle = ctypes.c_void_p
_handle_p = ctypes.POINTER(ctypes.c_void_p)
_str = ctypes.c_char_p
_text_out = ctypes.POINTER(ctypes.c_void_p)  # char**: freed with spmvc_string_free
_int = ctypes.c_int
_void_p = ctypes.c_void_p
_double = ctypes.c_double

# name: argument types (every function returns a status unless listed in _RESTYPES).
_SIGNATURES = {
    "spmvc_last_error": [],
    "spmvc_status_name": [_int],
    "spmvc_version": [],
    "spmvc_string_free": [_void_p],
    "spmvc_device_available": [_text_out],
    "spmvc_options_check": [_str],
    "spmvc_matrix_from_csr": [_i64, _i64, _i64, _i64_p, _i32_p, _f64_p, _handle_p],
    "spmvc_matrix_read": [_str, _handle_p],
    "spmvc_matrix_generate": [_str, _handle_p],
    "spmvc_matrix_destroy": [_handle],
    "spmvc_matrix_shape": [_handle, _i64_p, _i64_p, _i64_p],
    "spmvc_matrix_arrays": [_handle, _i64_p, _i32_p, _f64_p],
    "spmvc_inspect": [_handle, _int, _text_out],
    "spmvc_plan": [_handle, _str, _int, _text_out],
    "spmvc_generate": [_handle, _str, _text_out, _text_out],
    "spmvc_emit": [_handle, _str, _str, _text_out],
    "spmvc_warm_up": [_str],
    "spmvc_compile": [_handle, _str, _handle_p],
    "spmvc_compile_device_csr": [_i64, _i64, _i64, _void_p, _void_p, _void_p, _str, _handle_p],
    "spmvc_operator_destroy": [_handle],
    "spmvc_operator_shape": [_handle, _i64_p, _i64_p],
    "spmvc_operator_apply": [_handle, _void_p, _void_p, _double, _double, _void_p],
    "spmvc_operator_apply_host": [_handle, _f64_p, _f64_p, _double, _double],
    "spmvc_operator_update_values": [_handle, _f64_p, _i64, ctypes.POINTER(_int), _text_out],
    "spmvc_operator_update_values_device": [_handle, _void_p, ctypes.POINTER(_int), _text_out],
    "spmvc_operator_apply_many": [_handle, _void_p, _void_p, _int, _int, _double, _double,
                                  _void_p],
    "spmvc_operator_apply_many_host": [_handle, _f64_p, _f64_p, _int, _int, _double, _double],
    "spmvc_operator_apply_transpose": [_handle, _void_p, _void_p, _double, _double, _void_p],
    "spmvc_operator_apply_transpose_host": [_handle, _f64_p, _f64_p, _double, _double],
    "spmvc_operator_plan_order": [_handle, ctypes.POINTER(_int)],
    "spmvc_operator_plan_map": [_handle, _int, ctypes.POINTER(_i32_p), _i64_p],
    "spmvc_operator_to_plan_order": [_handle, _void_p, _void_p, _int, _void_p],
    "spmvc_operator_from_plan_order": [_handle, _void_p, _void_p, _int, _void_p],
    "spmvc_operator_plan": [_handle, _int, _text_out],
    "spmvc_operator_source": [_handle, _text_out, _text_out],
    "spmvc_operator_timings": [_handle, _text_out],
}
_RESTYPES = {
    "spmvc_last_error": ctypes.c_char_p,
    "spmvc_status_name": ctypes.c_char_p,
    "spmvc_version": ctypes.c_char_p,
    "spmvc_string_free": None,
    "spmvc_device_available": _int,
    "spmvc_matrix_destroy": None,
    "spmvc_operator_destroy": None,
}

_lib = None


def candidates():
    """Where the library is looked for, in order."""
    env = os.environ.get("SPMVC_LIBRARY")
    if env:
        return [env]  # asked for: nothing else is tried
    found = []
    bundled = pathlib.Path(__file__).resolve().parent / "_native" / _LIBRARY_NAME
    found.append(str(bundled))
    found.append(_LIBRARY_NAME)
    return found


def library():
    """The loaded libspmvc (loaded at first use)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in candidates():
        is_file = os.sep in path
        if is_file and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = _RESTYPES.get(name, _int)
        _lib = lib
        return lib
    raise LibraryNotFoundError(
        "cannot load the spmvc shared library; tried: " + "; ".join(tried) +
        ". Set SPMVC_LIBRARY to the path of libspmvc.so (built by `cmake --build --preset "
        "release --target spmvc_shared` in build/release/capi/), or reinstall the package "
        "with it bundled")


def check(status):
    """Raises the exception of a failed call, with the library's message."""
    if status == _OK:
        return
    lib = library()
    message = lib.spmvc_last_error().decode("utf-8", "replace")
    exc = _EXCEPTIONS.get(status, InternalError)
    raise exc(message)


def call(name, *args):
    check(getattr(library(), name)(*args))


def take_text(pointer):
    """The text of a char** result, freed in the library."""
    if not pointer.value:
        return None
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        library().spmvc_string_free(pointer)


def text_out():
    return ctypes.c_void_p()


def version():
    return library().spmvc_version().decode()


def device_available():
    """(True, "") when a CUDA device is usable, else (False, why)."""
    why = text_out()
    ok = bool(library().spmvc_device_available(ctypes.byref(why)))
    reason = take_text(why) or ""
    return ok, reason
