// Package web holds the viewer's browser page: plain HTML, CSS and
// JavaScript with no build step and no external resources, embedded in the
// binary.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html style.css app.js stamp.js
var files embed.FS

// FS returns the page's files: index.html at the root, with the style sheet
// and scripts beside it. The returned file system is read-only and safe for
// concurrent use.
func FS() fs.FS { return files }
