//go:build race

package cpu

// timeScale stretches the time bounds of tests under the race detector,
// which runs the engine's loops several times slower.
const timeScale = 10
