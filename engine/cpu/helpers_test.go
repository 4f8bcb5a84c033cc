package cpu

import (
	"context"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

func loadModel(t testing.TB, path string) *model {
	t.Helper()
	em, err := New().Load(context.Background(), path, engine.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	return em.(*model)
}
