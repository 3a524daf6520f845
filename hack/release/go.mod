module github.com/taintevict/taintevict/hack/release

go 1.26

require golang.org/x/mod v0.37.0
