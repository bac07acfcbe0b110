// The CPU emulator's <cuda_pipeline_primitives.h>: the same primitives as <cuda_pipeline.h>.
#pragma once
#include "cuda_pipeline.h"
