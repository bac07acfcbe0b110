// The CPU emulator force-includes cuda_emu.h, which provides what this header would.
#pragma once
