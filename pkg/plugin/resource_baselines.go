package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
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

// baselineCache is the process's cache of parsed baseline files, shared by
// the baselines routes and the benchmark query (fetch.Env.Baselines) of every
// data source.
var baselineCache = bench.NewCache(0)

// baselineLocks serialises the quota check and the write of uploads into one
// folder (bench.OrgDir), across the data sources of the process.
var baselineLocks sync.Map // folder path → *sync.Mutex

// addBaselineRoutes registers
//
//	GET  /baselines: {"baselines": [baselineInfo…], "problems": ["file: sentence"…]}: what the
//	     request's organisation reads from baselinesPath (the operator's files at its top and the
//	     organisation's uploads, bench.Cache.ReadOrg);
//	POST /baselines?name=N[&overwrite=true]: the body is a result file. Only an Editor or Admin
//	     of the organisation may upload (403 with {"error": sentence} otherwise). It is parsed
//	     (400 when malformed), and saved as <baselinesPath>/org-<org>/N.json when baselinesPath is
//	     set (409 when N exists there and overwrite is not true; 507 when the folder would pass
//	     the data source's quota, baselinesQuotaMiB and baselinesMaxFiles).
//	     200 {"name", "saved", "read": [baselineInfo…], "note"}.
func (i *Instance) addBaselineRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /baselines", func(w http.ResponseWriter, r *http.Request) {
		out := struct {
			Baselines []baselineInfo `json:"baselines"`
			Problems  []string       `json:"problems"`
		}{Baselines: []baselineInfo{}, Problems: []string{}}
		if dir := i.settings.BaselinesPath; dir != "" {
			d := baselineCache.ReadOrg(dir, orgOf(backend.PluginConfigFromContext(r.Context())))
			for _, n := range d.Names() {
				out.Baselines = append(out.Baselines, infoOf(d.Baselines[n]))
			}
			out.Problems = append(out.Problems, d.Problems...)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("POST /baselines", func(w http.ResponseWriter, r *http.Request) {
		if msg := uploadRoleError(backend.UserFromContext(r.Context())); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
		name := r.URL.Query().Get("name")
		if !bench.NameRE.MatchString(name) || strings.Contains(name, "..") {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("name: %q must be 1-100 letters, digits, '_', '.' or '-', without '..' (it becomes the file name)", name))
			return
		}
		limit := int64(bench.MaxFileSize)
		if q := int64(i.settings.BaselinesQuotaMiB) << 20; q > 0 && q < limit {
			limit = q
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s: larger than %d MiB (the largest file the data source accepts: its baselinesQuotaMiB, at most %d MiB)", name, limit>>20, bench.MaxFileSize>>20))
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
		if i.settings.BaselinesPath == "" {
			out.Note = "validated but not saved: set baselinesPath in the data source's settings to keep baselines"
			writeJSON(w, out)
			return
		}
		dir := bench.OrgDir(i.settings.BaselinesPath, orgOf(backend.PluginConfigFromContext(r.Context())))
		q := uploadQuota{bytes: int64(i.settings.BaselinesQuotaMiB) << 20, files: i.settings.BaselinesMaxFiles}
		if q.bytes <= 0 { // settings not built by settings.Load: its defaults
			q.bytes = settings.DefaultBaselinesQuotaMiB << 20
		}
		if q.files <= 0 {
			q.files = settings.DefaultBaselinesMaxFiles
		}
		err = saveBaseline(dir, name, data, r.URL.Query().Get("overwrite") == "true", q)
		var qe quotaError
		switch {
		case errors.Is(err, os.ErrExist):
			writeError(w, http.StatusConflict, fmt.Sprintf("name: a baseline called %q exists; upload with overwrite to replace it", name))
			return
		case errors.As(err, &qe):
			writeError(w, http.StatusInsufficientStorage, fmt.Sprintf("%s: not saved: %s", name, qe.Error()))
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
		out.Note = fmt.Sprintf("saved as %s/%s.json", filepath.Base(dir), name)
		writeJSON(w, out)
	})
}

// uploadRoleError is the sentence refusing an upload by user, or "" when the
// user's organisation role (the SDK's PluginContext.User.Role) is Editor or
// Admin: a Viewer may read baselines, not write files on the server.
func uploadRoleError(u *backend.User) string {
	if u == nil {
		return "uploading a baseline needs the Editor or Admin role; the request names no signed-in user"
	}
	switch u.Role {
	case "Admin", "Editor":
		return ""
	}
	role := u.Role
	if role == "" {
		role = "no"
	}
	return fmt.Sprintf("uploading a baseline needs the Editor or Admin role; %s has the %s role", u.Login, role)
}

// uploadQuota is what one data source may keep in its uploads folder: bytes and files.
type uploadQuota struct {
	bytes int64
	files int
}

// quotaError says which part of the quota an upload would pass.
type quotaError struct {
	q            uploadQuota
	bytes, files int64
}

func (e quotaError) Error() string {
	return fmt.Sprintf("the organisation's baselines folder would hold %d files and %.1f MiB, past the data source's quota of %d files (baselinesMaxFiles) and %d MiB (baselinesQuotaMiB); delete baselines or raise the quota",
		e.files, float64(e.bytes)/(1<<20), e.q.files, e.q.bytes>>20)
}

// saveBaseline writes data as dir/name.json through a temporary file and a
// rename, so a reader never sees half a file. It refuses (quotaError) when the
// folder's *.json files, with this one replacing any of the same name, would
// pass q. One upload into dir at a time checks and writes (baselineLocks).
func saveBaseline(dir, name string, data []byte, overwrite bool, q uploadQuota) error {
	mu, _ := baselineLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	// Every file operation goes through an os.Root of the folder: no name can reach outside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	file := name + ".json"
	if _, err := root.Stat(file); err == nil && !overwrite {
		return os.ErrExist
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	bytes, files := int64(len(data)), int64(1)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(e.Name()), ".json") || e.Name() == file {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		bytes += info.Size()
		files++
	}
	if bytes > q.bytes || files > int64(q.files) {
		return quotaError{q: q, bytes: bytes, files: files}
	}
	tmp := fmt.Sprintf(".upload-%d-%d", os.Getpid(), uploadSeq.Add(1))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = root.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, file)
}

// uploadSeq numbers the temporary files of uploads.
var uploadSeq atomic.Int64

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
