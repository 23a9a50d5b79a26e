package web

import (
	"io/fs"
	"strings"
	"testing"
)

func TestFS(t *testing.T) {
	for _, tc := range []struct {
		name, contains string
	}{
		{"index.html", `src="app.js"`},
		{"index.html", `src="stamp.js"`},
		{"index.html", `href="style.css"`},
		{"app.js", "VideoDecoder"},
		{"app.js", "requestVideoFrameCallback"},
		{"app.js", "'whep/'"},
		{"stamp.js", "ReplenishStamp"},
		{"style.css", ".panel"},
	} {
		t.Run(tc.name+" "+tc.contains, func(t *testing.T) {
			b, err := fs.ReadFile(FS(), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.contains) {
				t.Fatalf("%s lacks %q", tc.name, tc.contains)
			}
		})
	}
}

// TestNoDemoPanel checks that the viewer's page is the product's: the
// experiments demo adds its path panel itself.
func TestNoDemoPanel(t *testing.T) {
	b, err := fs.ReadFile(FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "pathctl") {
		t.Error("index.html refers to the demo's path panel")
	}
	if _, err := fs.Stat(FS(), "pathctl.js"); err == nil {
		t.Error("the page's files hold the demo's path panel")
	}
}

// TestSelfContained checks that the page loads nothing from elsewhere: a
// demo machine may be offline.
func TestSelfContained(t *testing.T) {
	err := fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS(), path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s refers to %q", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
