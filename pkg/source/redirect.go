package source

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many same-origin redirects one request to a remote
// server follows (Go's http.Client default is 10).
const maxRedirects = 5

// RedirectError is a redirect of a remote server that was not followed: to
// another origin (scheme, host or port), where the data source's credentials
// must not go, or one too many.
type RedirectError struct {
	// From is the origin of the configured server, To the redirect's target
	// (without user info, query or fragment).
	From, To string
	// TooMany is set when the request was redirected more than maxRedirects times.
	TooMany bool
}

func (e *RedirectError) Error() string {
	if e.TooMany {
		return fmt.Sprintf("redirected more than %d times within %s; set the data source's URL to the final address", maxRedirects, e.From)
	}
	return fmt.Sprintf("redirected to %s, another origin than %s: redirects to another scheme, host or port are refused so that the data source's credentials (basic auth, bearer token, custom headers) never reach another server; set the data source's URL to the final address", e.To, e.From)
}

// origin is scheme://host:port of u, with the scheme's default port spelled out.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// shownURL is u without user info, query and fragment.
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// sameOriginRedirects is an http.Client CheckRedirect that follows a
// redirect only within the origin of base, and at most maxRedirects times.
// The transport of a remote data source adds its credentials to every
// request it sends (the plugin SDK's middlewares do, on each hop), so
// refusing the hop is the only way to keep them from another origin.
func sameOriginRedirects(base *url.URL) func(req *http.Request, via []*http.Request) error {
	want := origin(base)
	return func(req *http.Request, via []*http.Request) error {
		if origin(req.URL) != want {
			return &RedirectError{From: want, To: shownURL(req.URL)}
		}
		if len(via) > maxRedirects {
			return &RedirectError{From: want, TooMany: true}
		}
		return nil
	}
}

// isRedirectError reports whether err is a refused redirect.
func isRedirectError(err error) bool {
	var re *RedirectError
	return errors.As(err, &re)
}
