package cpu

// tileActs is rows t0…t1−1 of form f (quantizeBlocks must have run) as
// one q8Blocks, back to back, as a rowsN kernel reads a token group.
func tileActs(a *acts, f blockForm, t0, t1 int) q8Blocks {
	b := &a.blocks[f]
	nb, ns := a.k/f.blockLen(), a.k/f.sumLen()
	return q8Blocks{q: b.q[t0*a.k : t1*a.k], d: b.d[t0*nb : t1*nb], sum: b.sum[t0*ns : t1*ns]}
}
