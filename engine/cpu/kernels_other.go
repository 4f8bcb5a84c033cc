//go:build purego || !(amd64 || arm64)

package cpu

// Without assembly (-tags purego, or an architecture with no kernels) the
// portable kernels are all there is.

func detectFeatures() cpuFeatures { return cpuFeatures{} }

func addSIMD(*kernels, cpuFeatures) {}
