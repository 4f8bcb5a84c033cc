//go:build linux || darwin || freebsd

package hub

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/edgectl/edgectl/internal/errkind"
)

// lockRepo takes, without waiting, every lock a download into the
// repository takes (.locks/models--ORG--NAME/<etag>.lock, lockFile): held
// by a running pull, `hf download` or serve's pull, it is a busy error, so
// rm never deletes blobs being written. The locks are released by unlock.
func lockRepo(rc repoCache) (unlock func(), err error) {
	dir := filepath.Join(rc.root, ".locks", rc.folder)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return func() {}, nil // no download ever took a lock here
	}
	var held []*os.File
	unlock = func() {
		for _, f := range held {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".lock" {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue // gone meanwhile
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			unlock()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, errkind.Errorf(errkind.Busy, "a download into %s is in progress (%s is locked): let it finish or stop it, then run rm again", rc.dir, p)
			}
			return nil, err
		}
		held = append(held, f)
	}
	return unlock, nil
}
