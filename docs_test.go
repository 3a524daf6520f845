package taintevict_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The reference as godoc shows it stays readable: these tests read the sources of the
// published modules (the core, clientgo and controllerruntime) as pkgsite does.

// publishedModules are the folders of the modules a consumer imports, and their paths.
var publishedModules = map[string]string{
	".":                 "github.com/taintevict/taintevict",
	"clientgo":          "github.com/taintevict/taintevict/clientgo",
	"controllerruntime": "github.com/taintevict/taintevict/controllerruntime",
}

// packageDirs returns the folders of the importable packages of the published modules:
// not internal, not a program, not test data; with their import paths.
func packageDirs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for root, mod := range publishedModules {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "examples" || name == "bench" || name == "hack") {
				return filepath.SkipDir
			}
			if path != root {
				_, own := publishedModules[path]
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && !own {
					return filepath.SkipDir // another module
				}
				if root == "." && own {
					return filepath.SkipDir // walked as its own module
				}
			}
			pkgs := parseDir(t, path, false)
			for pname := range pkgs {
				if pname == "main" || strings.HasSuffix(pname, "_test") {
					continue
				}
				rel, _ := filepath.Rel(root, path)
				ip := mod
				if rel != "." {
					ip += "/" + filepath.ToSlash(rel)
				}
				out[path] = ip
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func parseDir(t *testing.T, dir string, tests bool) map[string]*ast.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return strings.HasSuffix(fi.Name(), "_test.go") == tests
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestExamplesFitOnAScreen: no Example's body runs over 40 lines, and a file of Examples
// holds nothing else (pkgsite shows a whole file as the example when it holds helpers).
func TestExamplesFitOnAScreen(t *testing.T) {
	for dir := range packageDirs(t) {
		fset := token.NewFileSet()
		matches, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, file := range matches {
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			var examples, others []string
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && strings.HasPrefix(d.Name.Name, "Example") {
						examples = append(examples, d.Name.Name)
						if n := fset.Position(d.Body.Rbrace).Line - fset.Position(d.Body.Lbrace).Line - 1; n > 40 {
							t.Errorf("%s: %s's body is %d lines, want at most 40", file, d.Name.Name, n)
						}
						continue
					}
					others = append(others, d.Name.Name)
				case *ast.GenDecl:
					if d.Tok != token.IMPORT {
						others = append(others, d.Tok.String())
					}
				}
			}
			if len(examples) > 0 && len(others) > 0 {
				t.Errorf("%s: holds %v beside its Examples %v: pkgsite would show the whole file; move them to another _test.go file", file, others, examples)
			}
		}
	}
}

// figure matches what a benchmark measures: times of a few nanoseconds or microseconds,
// bytes and allocations per op, megabytes, ratios, and the file that keeps them.
var figure = regexp.MustCompile(`\b\d[\d,.]*\s?(ns|µs|us)\b|B/op|allocs/op|\b\d[\d,.]*\s?(MB|MiB|KiB|GB|GiB)\b|\d(\.\d+)?×|BENCHMARKS\.md`)

// TestDocsStateContracts: no exported doc comment of the published packages carries a
// benchmark figure: figures belong in BENCHMARKS.md, a doc says what a name promises.
func TestDocsStateContracts(t *testing.T) {
	for dir, ip := range packageDirs(t) {
		for _, pkg := range parseDir(t, dir, false) {
			if pkg.Name == "main" {
				continue
			}
			p := doc.New(pkg, ip, 0)
			check := func(name, text string) {
				if m := figure.FindString(text); m != "" {
					t.Errorf("%s.%s: its doc holds the figure %q", ip, name, m)
				}
			}
			check("(package)", p.Doc)
			for _, c := range p.Consts {
				check(strings.Join(c.Names, ","), c.Doc)
			}
			for _, v := range p.Vars {
				check(strings.Join(v.Names, ","), v.Doc)
			}
			for _, f := range p.Funcs {
				check(f.Name, f.Doc)
			}
			for _, ty := range p.Types {
				check(ty.Name, ty.Doc)
				for _, f := range append(ty.Funcs, ty.Methods...) {
					check(ty.Name+"."+f.Name, f.Doc)
				}
				for _, c := range ty.Consts {
					check(strings.Join(c.Names, ","), c.Doc)
				}
				if st, ok := ty.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						if len(fl.Names) > 0 && fl.Names[0].IsExported() {
							check(ty.Name+"."+fl.Names[0].Name, fl.Doc.Text())
						}
					}
				}
			}
		}
	}
}

// TestRootDocListsEveryPackage: the root package's doc names every importable package of
// the published modules, as a doc link.
func TestRootDocListsEveryPackage(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range packageDirs(t) {
		if ip == publishedModules["."] {
			continue
		}
		if !strings.Contains(string(src), "["+ip+"]") {
			t.Errorf("doc.go does not list %s (as the doc link [%s])", ip, ip)
		}
	}
}
