package main

import (
	"github.com/spf13/pflag"

	"github.com/edgectl/edgectl/internal/cli"
)

// One flag name per meaning across commands: where a command once spelled a
// flag differently (prep's --out for everyone else's -o/--output), the old
// spelling stays as a hidden alias so scripts keep working, and each use
// warns on stderr with the name to use instead.

// deprecatedAlias adds the hidden flag old to fs as another spelling of the
// already defined flag now.
func deprecatedAlias(io *cli.IO, fs *pflag.FlagSet, old, now string) {
	target := fs.Lookup(now)
	if target == nil {
		panic("deprecatedAlias: no flag --" + now)
	}
	f := fs.VarPF(&aliasValue{io: io, target: target, old: old}, old, "", "deprecated spelling of --"+now)
	f.NoOptDefVal = target.NoOptDefVal
	f.Hidden = true
}

// aliasValue forwards to the target flag, marking it given so required-flag
// checks and "flag given" tests see one flag.
type aliasValue struct {
	io     *cli.IO
	target *pflag.Flag
	old    string
}

func (a *aliasValue) Set(v string) error {
	if err := a.target.Value.Set(v); err != nil {
		return err
	}
	a.target.Changed = true
	name := "--" + a.target.Name
	if a.target.Shorthand != "" {
		name = "-" + a.target.Shorthand + "/" + name
	}
	a.io.Logf("edgectl: --%s is deprecated and will be removed; use %s", a.old, name)
	return nil
}

func (a *aliasValue) String() string { return a.target.Value.String() }
func (a *aliasValue) Type() string   { return a.target.Value.Type() }
