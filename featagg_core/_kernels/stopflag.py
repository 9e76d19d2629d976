"""Reading a cancel flag from inside a long numba kernel.

A plain ``stop[0]`` read may be hoisted out of a loop by LLVM when nothing in the loop can
(provably) write to ``stop``: the kernel then never sees another thread's write. The flag
is therefore read with an *acquire* atomic load, which the optimiser keeps inside the loop
and which sees a write made by another thread (``stop[0] = 1`` from Python).
"""
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _load_acquire_u8(typingctx, flag):
    if not (isinstance(flag, types.Array) and flag.dtype == types.uint8 and flag.ndim == 1):
        return None
    sig = types.uint8(flag)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load_atomic(ary.data, "acquire", 1)
    return sig, codegen


@njit(cache=True, nogil=True)
def stop_requested(stop):
    """True once ``stop[0]`` (a one-element uint8 array) has been set by any thread."""
    return _load_acquire_u8(stop) != 0
