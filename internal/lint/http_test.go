package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// brokerHTTPFiles are the only files of the broker core that may import
// net/http (or its subpackages, or promhttp): none. The lookup answer is
// package brokeradmin's, /metrics package brokermetrics', every other
// route package admin's.
var brokerHTTPFiles = []string{}

// brokerHandlers are the only methods of the core whose signature may
// name an HTTP handler type: none.
var brokerHandlers = []string{}

// TestNoHTTPHandlersOnBroker: no method of a type of the broker core
// takes or returns an HTTP handler or its parts (http.ResponseWriter,
// *http.Request, http.Handler, http.HandlerFunc, httpapi.Params,
// httpapi.HandlerFunc) but brokerHandlers (HTTP handlers belong to the
// packages that declare routes: admin, console, functions), and net/http
// is imported only by brokerHTTPFiles.
func TestNoHTTPHandlersOnBroker(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "broker")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := 0
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{} // local package name -> kind ("http" or "httpapi")
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			local := path.Base(p)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			switch {
			case p == "net/http":
				names[local] = "http"
			case p == "github.com/magnetar-mq/magnetar/httpapi":
				names[local] = "httpapi"
			}
			if (p == "net/http" || strings.HasPrefix(p, "net/http/") || strings.HasSuffix(p, "/promhttp")) && !slices.Contains(brokerHTTPFiles, name) {
				t.Errorf("broker/%s imports %s: the core serves no HTTP (routes belong to package admin, /metrics to brokermetrics)", name, p)
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			methods++
			if slices.Contains(brokerHandlers, fd.Name.Name) {
				continue
			}
			if what := handlerTypeIn(fd.Type, names); what != "" {
				t.Errorf("broker/%s: method %s's signature names %s: HTTP handlers belong to package admin", name, fd.Name.Name, what)
			}
		}
	}
	if methods < 100 {
		t.Fatalf("only %d methods found in broker: is the walk broken?", methods)
	}
}

// handlerTypeIn returns the first HTTP handler type (or part of one) the
// signature ft names, anywhere in it ("" if none); names maps the file's
// local names of net/http and httpapi to "http" and "httpapi".
func handlerTypeIn(ft *ast.FuncType, names map[string]string) string {
	parts := map[string][]string{
		"http":    {"ResponseWriter", "Request", "Handler", "HandlerFunc"},
		"httpapi": {"Params", "HandlerFunc"},
	}
	found := ""
	ast.Inspect(ft, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || found != "" {
			return found == ""
		}
		if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(parts[names[id.Name]], sel.Sel.Name) {
			found = id.Name + "." + sel.Sel.Name
		}
		return true
	})
	return found
}

// maxRoleMethods bounds the interfaces package admin declares for what it
// needs of the broker and its features (issue 32: small role interfaces,
// not one broker-sized service).
const maxRoleMethods = 10

// TestAdminRoles: package admin reaches the broker and its features only
// through interfaces it declares, each of at most maxRoleMethods methods,
// and never by a type assertion or type switch (which would reach a
// capability the declared roles do not name).
func TestAdminRoles(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "admin")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	roles := 0
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if it, ok := n.Type.(*ast.InterfaceType); ok {
					roles++
					if m := len(it.Methods.List); m > maxRoleMethods {
						t.Errorf("admin/%s: interface %s has %d methods (at most %d: split the role)", name, n.Name.Name, m, maxRoleMethods)
					}
				}
			case *ast.TypeAssertExpr:
				t.Errorf("admin/%s: type assertion at %s: reach a capability through a declared role", name, fset.Position(n.Pos()))
			}
			return true
		})
	}
	if roles < 5 {
		t.Fatalf("only %d interfaces found in admin: is the walk broken?", roles)
	}
}
