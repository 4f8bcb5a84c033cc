// Horizontal float sums the amd64 kernels share (#include "hsum_amd64.h";
// a header, not compiled on its own).

// HSUM_Y0: the sum of Y0's eight floats into X0's lane 0 (uses X1).
#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0x4E, X0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0xB1, X0, X1; \
	VADDPS X1, X0, X0

// HSUM_Z0: the sum of Z0's sixteen floats into X0's lane 0 (uses Y1).
#define HSUM_Z0 \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	HSUM_Y0
