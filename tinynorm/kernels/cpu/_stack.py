"""A small array on the stack of a Numba kernel, for register-blocked loops.

An array from ``np.empty`` inside a kernel lives on the heap, and LLVM keeps every update of it in
memory. An array from :func:`stack_array` is an ``alloca`` of a size fixed at compile time: when every
index into it is a constant once the loops around it are unrolled, LLVM promotes it to registers. The
convolution's register blocks (``conv_implicit.py``) are built on it.

A size can also come from a caller as a :func:`width` tuple: a tuple's length is part of its Numba
type, so each width compiles to its own kernel in which the width is a constant, and one source serves
several block widths. (An int argument would be a run-time value: the block then stays in memory, 5
GFLOP/s against 100 in a product measured both ways.)
"""
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def width(size: int) -> tuple[int, ...]:
    """A width for the kernels: a tuple of ``size`` zeros, whose ``len()`` a kernel reads as a constant."""
    return (0,) * size


def _constant(size: types.Type) -> int | None:
    if isinstance(size, types.IntegerLiteral):
        return size.literal_value
    if isinstance(size, types.UniTuple):
        return size.count
    return None


@intrinsic
def stack_array(typingctx, rows, columns, dtype):
    """``stack_array(ROWS, COLUMNS, np.float32)``: an uninitialised C-contiguous (ROWS, COLUMNS) array
    on the stack; ROWS and COLUMNS must be compile-time constants (module-level ints, or a
    :func:`width` tuple standing for its length). It lives as long as the function that made it: it
    must not be returned or stored anywhere."""
    shape = (_constant(rows), _constant(columns))
    if None in shape:
        return None  # Numba retries with literal values
    element = dtype.dtype
    array_type = types.Array(element, 2, "C")

    def codegen(context, builder, signature, args):
        data_type = context.get_data_type(element)
        itemsize = context.get_abi_sizeof(data_type)
        data = cgutils.alloca_once(builder, data_type, size=shape[0] * shape[1])
        array = context.make_array(array_type)(context, builder)
        intp = lambda value: context.get_constant(types.intp, value)  # noqa: E731
        context.populate_array(array, data=data, shape=[intp(shape[0]), intp(shape[1])],
                               strides=[intp(shape[1] * itemsize), intp(itemsize)], itemsize=intp(itemsize),
                               meminfo=None)
        return array._getvalue()

    return array_type(rows, columns, dtype), codegen
