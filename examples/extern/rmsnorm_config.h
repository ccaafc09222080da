// Block sizes of the hand-written RMSNorm (a local header: editing it rebuilds the kernel).
#pragma once

#define ROWS 16
#define MAX_COLS 1024
