// Command release builds a Go module proxy folder from the modules of a working tree, at a
// version of its choosing, as a tag of that version would publish them: the layout that
// GOPROXY=file://FOLDER serves (MODULE/@v/list, VERSION.info, VERSION.mod, VERSION.zip,
// with MODULE and VERSION case-escaped), and zips made by golang.org/x/mod/zip, which leaves
// out nested modules, vendored packages and whatever else the go command would.
//
// Usage:
//
//	go run . -version v0.1.0 -out FOLDER MODULEDIR...
//
// Each MODULEDIR is a folder with a go.mod, inside a git work tree. Its files are those git
// would commit from the working tree: tracked and untracked ones that .gitignore does not
// exclude, as they are on disk (a tracked file deleted from the disk is left out). The .info
// file's time is the commit time of HEAD, so that the folder is the same for the same tree.
// A module already in FOLDER at that version is replaced; others stay.
//
// hack/release-check.sh runs it, then builds a fresh module outside the repository against
// that folder.
//
// It exits 1 with one line on stderr for any error: a folder without a go.mod, a version
// that is not canonical or does not fit the module's major version, a file that a module
// zip cannot hold.
package main
