package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/pathguard"
	"github.com/edgectl/edgectl/internal/units"
)

func init() { register(newRmCmd) }

type rmOptions struct {
	Models []string
	Dirs   []string
	Config string
	Host   string
	APIKey string
	Yes    bool
}

func newRmCmd(io *cli.IO) *cobra.Command {
	o := &rmOptions{}
	cmd := &cobra.Command{
		Use:     "rm MODEL...",
		Aliases: []string{"remove"},
		Short:   "Delete models from the Hugging Face cache, prep outputs or serve's model dirs",
		Long: `Deletes models by the names edgectl ls shows, as ollama rm does:
  ORG/NAME            a repository in the Hugging Face cache, every revision
  ORG/NAME@REVISION   one revision (a ref such as main, a commit or 7+ digits
                      of one): its snapshot, its refs, and the blobs no other
                      revision links to
  NAME                a model serve finds in its model dirs (EDGECTL_MODELS,
                      --config's models, --dir): its file or directory; a prep
                      output goes whole

It refuses while a running server has the model loaded (asked with ps at
--host, else EDGECTL_HOST, else 127.0.0.1:11434, when one answers), and never
deletes through a symlink that leads out of the cache or models directory.
Each model disappears in one rename before its files are deleted, so an
interruption never leaves half a model. It asks before deleting on a
terminal; elsewhere it needs --yes.`,
		Example: `  edgectl rm Qwen/Qwen2.5-0.5B
  edgectl rm Qwen/Qwen3-1.7B@v1.0 --yes
  edgectl rm tinystories --dir ~/models --yes --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Models = args
			return runRm(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.Yes, "yes", "y", false, "delete without asking (needed when stdin is not a terminal)")
	f.StringArrayVar(&o.Dirs, "dir", nil, "also look in this models directory, as serve --models takes it (repeatable)")
	f.StringVar(&o.Config, "config", "", "also look in the models of this serve config file")
	f.StringVar(&o.Host, "host", "", "the server to ask what is loaded: HOST, HOST:PORT, :PORT or http(s)://HOST:PORT (env EDGECTL_HOST)")
	f.StringVar(&o.APIKey, "api-key", "", "the server's API key (env EDGECTL_API_KEY)")
	return cmd
}

// rmTarget is one thing rm deletes: a Hub cache plan, or a path in a
// models directory.
type rmTarget struct {
	Name    string   `json:"name"`
	Source  string   `json:"source"`
	Paths   []string `json:"paths"`
	Commits []string `json:"commits,omitempty"`
	Freed   int64    `json:"freed"`

	names []string // serve's names for it: matched against a server that does not say where its models are
	plan  *hub.DeletePlan
	root  string
}

// rmOutput is `rm --json`.
type rmOutput struct {
	Deleted []rmTarget `json:"deleted"`
	Freed   int64      `json:"freed"`
}

func runRm(ctx context.Context, io *cli.IO, o *rmOptions) error {
	for _, a := range o.Models {
		if err := checkModelName(a); err != nil {
			return err
		}
	}
	dirs, err := modelDirs(o.Dirs, o.Config)
	if err != nil {
		return err
	}
	ms, err := findLocal(dirs)
	if err != nil {
		return err
	}
	var targets []rmTarget
	for _, a := range o.Models {
		ts, err := rmTargets(ms, a)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if !slices.ContainsFunc(targets, func(u rmTarget) bool { return slices.Equal(u.Paths, t.Paths) }) {
				targets = append(targets, t)
			}
		}
	}
	if err := checkNotLoaded(ctx, io, o, targets); err != nil {
		return err
	}
	if err := confirmRm(io, o.Yes, targets); err != nil {
		return err
	}
	out := rmOutput{Deleted: []rmTarget{}}
	for _, t := range targets {
		if err := t.delete(); err != nil {
			return fmt.Errorf("deleting %s: %w", t.Name, err)
		}
		out.Deleted, out.Freed = append(out.Deleted, t), out.Freed+t.Freed
		io.Printf("deleted %s (%s freed)\n", t.Name, units.Bytes(t.Freed))
	}
	if io.JSON {
		return io.WriteJSON(out)
	}
	return nil
}

// checkModelName refuses what reads as a path rather than a name: rm
// deletes only what ls lists, chosen by name, so no argument can reach a
// file by itself (`../x`, `/etc`, `~/models`).
func checkModelName(a string) error {
	if a == "" || strings.Contains(a, "..") || strings.ContainsAny(a, `\`) || strings.ContainsFunc(a, unicode.IsControl) ||
		strings.HasPrefix(a, ".") || strings.HasPrefix(a, "~") || filepath.IsAbs(a) && filepath.Clean(a) != a {
		return notAName(a)
	}
	return nil
}

func notAName(a string) error {
	return usagef("%q is not a model name: rm takes names as edgectl ls shows them (ORG/NAME[@REVISION] in the Hub cache, NAME in a models dir, or the absolute path ls shows for one there)", a)
}

// rmTargets resolves one argument against the local models: ORG/NAME[@REV]
// in the Hub caches first, then serve's names.
func rmTargets(ms *localModels, arg string) ([]rmTarget, error) {
	if filepath.IsAbs(arg) { // a path, only as ls shows it for a model in a models dir
		for _, m := range ms.Models {
			if m.Source != sourceHub && m.Path == arg {
				t, err := pathTarget(m)
				return []rmTarget{t}, err
			}
		}
		return nil, notAName(arg)
	}
	repo, rev, hasRev := strings.Cut(arg, "@")
	if hasRev {
		if _, _, err := hub.ParseRef(arg); err != nil {
			return nil, errkind.Wrap(errkind.Usage, err)
		}
	}
	var out []rmTarget // ORG/NAME: in every Hub cache that holds it
	for _, m := range ms.Models {
		if m.Source != sourceHub || !strings.EqualFold(m.Name, repo) ||
			slices.ContainsFunc(out, func(t rmTarget) bool { return t.plan.Cache == m.cache }) {
			continue
		}
		t, err := hubTarget(ms, m, rev)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) > 0 {
		return out, nil
	}
	if hasRev {
		return nil, errkind.Errorf(errkind.NotFound, "%s is not in the Hub cache (%s): edgectl ls lists what is", repo, cacheDirs(ms))
	}
	// serve's names: a Hub repository goes whole, anything else by its
	// path. Two models under one name are refused before either is judged.
	name := canonicalName(arg)
	var rows []localModel
	for _, m := range ms.Models {
		if canonicalName(m.Name) != name && !slices.ContainsFunc(m.ServeNames, func(s string) bool { return canonicalName(s) == name }) {
			continue
		}
		if m.Source == sourceHub {
			if slices.ContainsFunc(rows, func(r localModel) bool { return r.cache == m.cache && r.Name == m.Name }) {
				continue // another revision of a repository already matched
			}
			m.Path = filepath.Dir(filepath.Dir(m.Path)) // the repository goes whole
		}
		rows = append(rows, m)
	}
	switch {
	case len(rows) == 0:
		return nil, errkind.Errorf(errkind.NotFound, "no model named %s in the Hub cache (%s) or the models dirs (%s): edgectl ls lists what there is", arg, cacheDirs(ms), strings.Join(ms.Dirs, ", "))
	case len(rows) > 1:
		var which []string
		for _, m := range rows {
			which = append(which, m.Name+" ("+m.Path+")")
		}
		return nil, usagef("%s names %d models: %s; give ORG/NAME for the Hub cache, or the path ls shows for the one to delete", arg, len(rows), strings.Join(which, ", "))
	}
	var t rmTarget
	var err error
	if rows[0].Source == sourceHub {
		t, err = hubTarget(ms, rows[0], "")
	} else {
		t, err = pathTarget(rows[0])
	}
	return []rmTarget{t}, err
}

// hubTarget plans deleting the Hub repository of row m, or one revision.
func hubTarget(ms *localModels, m localModel, rev string) (rmTarget, error) {
	p, err := hub.PlanDelete(m.cache, m.Name, rev)
	if err != nil {
		return rmTarget{}, err
	}
	t := rmTarget{Name: p.Repo, Source: sourceHub, Paths: p.Paths, Commits: p.Commits, Freed: p.Freed, plan: p}
	if !p.Whole {
		t.Name += "@" + p.Commits[0][:12]
	}
	for _, r := range ms.Models {
		if r.Source == sourceHub && r.cache == m.cache && r.Name == m.Name && (p.Whole || slices.Contains(p.Commits, r.Commit)) {
			t.names = appendNew(t.names, r.ServeNames...)
		}
	}
	return t, nil
}

// pathTarget is a model found in a models dir: its file or directory, which
// must lie inside that dir without a symlink leading out, and be no link.
func pathTarget(m localModel) (rmTarget, error) {
	if m.root == "" {
		return rmTarget{}, usagef("%s (%s) is given to serve as a model itself, not found in a models dir: take it out of EDGECTL_MODELS or --config and delete it yourself", m.Name, m.Path)
	}
	if fi, err := os.Lstat(m.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		to, _ := os.Readlink(m.Path)
		return rmTarget{}, errkind.Errorf(errkind.Input, "%s is a symlink to %s: rm deletes only what lies inside the models dir %s; remove the link (or what it points to) yourself", m.Path, to, m.root)
	}
	if err := pathguard.Inside(m.root, m.Path); err != nil {
		return rmTarget{}, errkind.Errorf(errkind.Input, "refusing to delete %s: %v", m.Name, err)
	}
	return rmTarget{Name: m.Name, Source: m.Source, Paths: []string{m.Path}, Freed: ownBytes(m.Path), names: m.ServeNames, root: m.root}, nil
}

// ownBytes is what deleting path frees: its regular files, not what its
// links point to.
func ownBytes(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func (t rmTarget) delete() error {
	if t.plan != nil {
		return t.plan.Execute()
	}
	if err := pathguard.Inside(t.root, t.Paths[0]); err != nil { // again: the tree may have changed while rm asked
		return err
	}
	return atomicfile.Remove(t.Paths[0], "")
}

// checkNotLoaded asks the server at --host (else EDGECTL_HOST, else
// Ollama's default address) what it has loaded, and refuses to delete a
// model it holds: by the path edgectl serve reports (/api/show's
// edgectl.path), else by name. No server answering is no conflict.
func checkNotLoaded(ctx context.Context, io *cli.IO, o *rmOptions, targets []rmTarget) error {
	c, err := serverClient(o.Host, o.APIKey)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ps, err := c.PS(ctx)
	var se *api.StatusError
	switch {
	case errors.As(err, &se) && se.StatusCode == 404:
		io.Logf("the server at %s has no /api/ps (not an Ollama-compatible server): not checking what it has loaded", c.URL())
		return nil
	case errors.As(err, &se) && (se.StatusCode == 401 || se.StatusCode == 403):
		return errkind.Errorf(errkind.Auth, "the server at %s refused to say what it has loaded (%v): pass its key with --api-key or EDGECTL_API_KEY so rm can check", c.URL(), err)
	case se != nil:
		return fmt.Errorf("cannot tell what the server at %s has loaded: %v; try again, or stop the server", c.URL(), err)
	case err != nil:
		io.Logf("no server answers at %s: nothing loaded there to check", c.URL())
		return nil
	}
	for _, m := range ps.Models {
		path := ""
		if show, err := c.Show(ctx, &api.ShowRequest{Model: m.Name}); err == nil {
			path, _ = show.ModelInfo["edgectl.path"].(string)
		}
		for _, t := range targets {
			if t.loadedAs(path, m.Name) {
				return errkind.Errorf(errkind.Busy, `%s is loaded by the server at %s as %s: unload it (curl %s/api/generate -d '{"model":"%s","keep_alive":0}') or stop the server, then run rm again`,
					t.Name, c.URL(), m.Name, c.URL(), m.Name)
			}
		}
	}
	return nil
}

// loadedAs reports whether a model the server loaded from path (as the
// server names it; "" when it does not say) under name is t.
func (t rmTarget) loadedAs(path, name string) bool {
	if filepath.IsAbs(path) {
		lp := resolved(path)
		return slices.ContainsFunc(t.Paths, func(p string) bool {
			rp := resolved(p)
			return lp == rp || strings.HasPrefix(lp, rp+string(filepath.Separator))
		})
	}
	n := canonicalName(name)
	return slices.ContainsFunc(t.names, func(s string) bool { return canonicalName(s) == n })
}

// resolved is p with its symlinks resolved where it exists.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// canonicalName is a model name as serve compares them: lower case, with
// tag latest when it has none.
func canonicalName(n string) string {
	n = strings.ToLower(strings.TrimSpace(n))
	if !strings.Contains(n, ":") {
		n += ":latest"
	}
	return n
}

func cacheDirs(ms *localModels) string {
	var d []string
	for _, c := range ms.Caches {
		d = append(d, c.Dir)
	}
	return strings.Join(d, ", ")
}

// confirmRm shows what goes and asks, on a terminal; elsewhere --yes must
// say so, since nobody can answer.
func confirmRm(io *cli.IO, yes bool, targets []rmTarget) error {
	var freed int64
	for _, t := range targets {
		freed += t.Freed
	}
	if yes {
		return nil
	}
	f, ok := io.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return usagef("rm deletes files and stdin is not a terminal to ask on: pass --yes to delete %s (%s)", targetNames(targets), units.Bytes(freed))
	}
	for _, t := range targets {
		fmt.Fprintf(io.ErrOut, "  %s  %s  %s\n", t.Name, t.Paths[0], units.Bytes(t.Freed))
	}
	fmt.Fprintf(io.ErrOut, "Delete %s, freeing %s? [y/N] ", targetNames(targets), units.Bytes(freed))
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed: nothing deleted")
}

func targetNames(ts []rmTarget) string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}
