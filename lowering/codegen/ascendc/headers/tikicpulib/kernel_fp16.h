// Empty on purpose: in tikicpulib this header defines the CPU twin of a type; the
// declarations dslc's type check needs are in stub_def.h.
#pragma once
