package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmd/magnetar is wiring (issue 32): it builds its commands with
// constructors and hands the work to packages. cmdMaxLines is the
// figure of 4 Dec 2026 evening (2,198 lines, after the shared flag
// groups moved to internal/cliflags and the function worker process to
// internal/stack) with room for a few flags; the goal was
// ~2,500. New flag groups belong in internal/cliflags.
const (
	// cmdMaxLines: non-test lines of cmd/magnetar at most.
	cmdMaxLines = 2300
	// cmdFuncLines: no function in cmd/magnetar is longer.
	cmdFuncLines = 60
	// cmdLongFuncs: functions over cmdFuncLines allowed (none).
	cmdLongFuncs = 0
)

// TestCmdIsWiring: cmd/magnetar has no init() (commands are built by
// constructors called from newRootCmd), stays under cmdMaxLines
// non-test lines and has at most cmdLongFuncs functions over
// cmdFuncLines lines.
func TestCmdIsWiring(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "cmd", "magnetar")
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	lines, files := 0, 0
	var long []string
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		lines += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s: func init(): build the command in a constructor called from newRootCmd", fset.Position(fn.Pos()))
			}
			n := fset.Position(fn.Body.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > cmdFuncLines {
				long = append(long, fset.Position(fn.Pos()).String()+" "+fn.Name.Name)
			}
		}
	}
	if files == 0 {
		t.Fatal("no files in cmd/magnetar: the check saw nothing")
	}
	if lines > cmdMaxLines {
		t.Errorf("cmd/magnetar has %d non-test lines, at most %d: move the work into a package", lines, cmdMaxLines)
	}
	if len(long) > cmdLongFuncs {
		t.Errorf("cmd/magnetar has %d functions over %d lines, at most %d:\n%s", len(long), cmdFuncLines, cmdLongFuncs, strings.Join(long, "\n"))
	}
	t.Logf("cmd/magnetar: %d non-test lines in %d files, %d functions over %d lines", lines, files, len(long), cmdFuncLines)
}
