package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
)

// baselineInfo is what the baselines routes say about one baseline read:
// its name, tool, model, the load it ran at and a one-sentence summary.
type baselineInfo struct {
	Name    string `json:"name"`
	Tool    string `json:"tool"`
	Model   string `json:"model,omitempty"`
	Load    string `json:"load"`
	Summary string `json:"summary"`
}

func infoOf(b bench.Baseline) baselineInfo {
	return baselineInfo{Name: b.Name, Tool: b.Tool, Model: b.Model, Load: b.Load(), Summary: b.Summary()}
}

// addBaselineRoutes registers
//
//	GET  /baselines: {"baselines": [baselineInfo…], "problems": ["file: sentence"…]} from baselinesPath;
//	POST /baselines?name=N[&overwrite=true]: the body is a result file; it is
//	     parsed (400 with {"error": sentence} when malformed), and saved as
//	     <baselinesPath>/N.json when baselinesPath is set (409 when N exists
//	     and overwrite is not true). 200 {"name", "saved", "read": [baselineInfo…], "note"}.
func (i *Instance) addBaselineRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /baselines", func(w http.ResponseWriter, _ *http.Request) {
		out := struct {
			Baselines []baselineInfo `json:"baselines"`
			Problems  []string       `json:"problems"`
		}{Baselines: []baselineInfo{}, Problems: []string{}}
		if dir := i.settings.BaselinesPath; dir != "" {
			d := bench.ReadDir(os.DirFS(dir))
			for _, n := range d.Names() {
				out.Baselines = append(out.Baselines, infoOf(d.Baselines[n]))
			}
			out.Problems = append(out.Problems, d.Problems...)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("POST /baselines", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if !bench.NameRE.MatchString(name) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("name: %q must be 1-100 letters, digits, '_', '.' or '-' (it becomes the file name)", name))
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, bench.MaxFileSize))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s: larger than %d MiB", name, bench.MaxFileSize>>20))
			return
		}
		bs, err := bench.Parse(name, data)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		out := struct {
			Name  string         `json:"name"`
			Saved bool           `json:"saved"`
			Read  []baselineInfo `json:"read"`
			Note  string         `json:"note"`
		}{Name: name}
		for _, b := range bs {
			out.Read = append(out.Read, infoOf(b))
		}
		dir := i.settings.BaselinesPath
		if dir == "" {
			out.Note = "validated but not saved: set baselinesPath in the data source's settings to keep baselines"
			writeJSON(w, out)
			return
		}
		err = saveBaseline(dir, name, data, r.URL.Query().Get("overwrite") == "true")
		switch {
		case errors.Is(err, os.ErrExist):
			writeError(w, http.StatusConflict, fmt.Sprintf("name: a baseline called %q exists; upload with overwrite to replace it", name))
			return
		case err != nil:
			i.logger.Warn("saving a baseline failed", "name", name, "error", err)
			cause := errors.Unwrap(err)
			if cause == nil {
				cause = err
			}
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("%s: could not be saved in baselinesPath (%v)", name, cause))
			return
		}
		out.Saved = true
		out.Note = fmt.Sprintf("saved as %s.json", name)
		writeJSON(w, out)
	})
}

// saveBaseline writes data as dir/name.json through a temporary file and a
// rename, so a reader never sees half a file.
func saveBaseline(dir, name string, data []byte, overwrite bool) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	path := filepath.Join(dir, name+".json")
	if _, err := os.Stat(path); err == nil && !overwrite {
		return os.ErrExist
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
