package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// listTree returns every file of repo at commit from the paginated tree API,
// as siblings with sizes, blob ids and LFS sha256.
func (c *Client) listTree(ctx context.Context, repo, commit string) ([]Sibling, error) {
	t := target{repo: repo, revision: commit}
	next := c.cfg.Endpoint + "/api/models/" + repo + "/tree/" + url.PathEscape(commit) + "?recursive=true"
	var out []Sibling
	for pages := 0; next != ""; pages++ {
		if pages > 100000 {
			return nil, fmt.Errorf("%s: the tree listing does not end", t)
		}
		var page []TreeEntry
		var link string
		err := c.withRetry(ctx, t.String(), nil, func() error {
			resp, err := c.do(ctx, http.MethodGet, next, nil, true)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return c.statusError(resp, t)
			}
			page = nil
			if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
				return &transient{err: fmt.Errorf("reading the file tree of %s: %w", t, err)}
			}
			link = resp.Header.Get("Link")
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.Type != "file" {
				continue
			}
			size := e.Size
			s := Sibling{RFilename: e.Path, Size: &size, BlobID: e.OID}
			if e.LFS != nil {
				s.LFS = &LFSInfo{SHA256: e.LFS.OID, Size: e.LFS.Size, PointerSize: e.LFS.PointerSize}
			}
			out = append(out, s)
		}
		if next, err = resolveLink(next, nextLink(link)); err != nil {
			return nil, fmt.Errorf("%s: bad Link header %q", t, link)
		}
	}
	return out, nil
}

// resolveLink makes a Link target absolute against the page it came from.
func resolveLink(base, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

// nextLink finds the rel="next" target in an RFC 8288 Link header.
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "rel") && strings.Trim(v, `"`) == "next" {
				return strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
			}
		}
	}
	return ""
}
