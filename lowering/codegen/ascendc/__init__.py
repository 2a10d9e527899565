"""The AscendC target: IR -> a CANN AscendC project (kernels, host launcher, CMakeLists.txt)."""
