package lint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdFence    = regexp.MustCompile("(?s)```.*?```")
	mdCodeSpan = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdScheme   = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// TestDocLinksResolve: every relative link in the repository's Markdown
// files (BENCHMARKS.md's tables link the notes the figures come from)
// names a file or directory that exists. Links inside code are not links.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	links := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := mdCodeSpan.ReplaceAllString(mdFence.ReplaceAllString(string(src), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if mdScheme.MatchString(target) || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: link %q does not resolve", rel, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if links == 0 {
		t.Error("no relative Markdown links found; BENCHMARKS.md links its notes")
	}
}
