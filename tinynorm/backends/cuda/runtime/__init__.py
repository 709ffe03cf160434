"""The CUDA runtime: device memory (:mod:`.memory`, a caching allocator) and kernel launches
(:mod:`.launch`, Numba's compiled kernels started through the driver).

Everything here works on tinynorm's own arrays and knows nothing of the kernels; the kernel wrappers
of ``tinynorm.kernels.cuda`` allocate and launch through it. Importing it first makes numba-cuda work
with numpy 2.5 (:mod:`.numpy_compat`) and Numba's CUDA simulator safe for block-wide shared memory
(:mod:`.simulator_compat`) and quick to run thread blocks (:mod:`.simulator_blocks`).
"""
from . import numpy_compat, simulator_blocks, simulator_compat

numpy_compat.apply()
simulator_compat.apply()
simulator_blocks.apply()
