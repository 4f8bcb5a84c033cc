//go:build unix && !linux

package cpu

func adviseHuge([]byte)  {}
func adviseSmall([]byte) {}
