// Package depcheck holds no code: its test (depcheck_test.go) fails when
// an import runs against edgectl's data flow. The rules it holds are
// written out in docs/architecture.md ("Rules the depcheck test holds");
// a new package needs a rule there and in the test before it passes.
package depcheck
