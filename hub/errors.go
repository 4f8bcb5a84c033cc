package hub

import (
	"errors"
	"syscall"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Hub and cache failures are plain errors marked with an errkind (not
// found, auth, offline, checksum, disk full, network, busy): one line that
// says what to do, and the kind the command layer turns into an exit code.

// diskErr turns ENOSPC/EDQUOT on a cache write into a disk-full error that
// says where, and passes any other error through.
func diskErr(err error, path string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return errkind.Errorf(errkind.DiskFull, "no space left on device writing %s: free space or point HF_HUB_CACHE (or --local-dir) at a larger disk", path)
	}
	return err
}
