package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// The Hugging Face Hub's model API, as huggingface_hub's HfApi.model_info
// calls it: GET {HF_ENDPOINT}/api/models/{repo_id}/revision/{revision}
// answers {"sha": <commit>, …}; an unknown or private repository answers
// 401 or 404 ("Repository not found"). HF_ENDPOINT (a mirror) is honoured as
// huggingface_hub honours it; one that is no http(s) URL is refused, never
// replaced by huggingface.co (a mirror is often set to keep traffic in-house).

var reModelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$`)

func hubEndpoint() (string, error) {
	raw := os.Getenv("HF_ENDPOINT")
	if raw == "" {
		return "https://huggingface.co", nil
	}
	e := strings.TrimRight(raw, "/")
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		shown := raw
		if len(shown) > 100 {
			shown = shown[:100] + "…"
		}
		return "", fmt.Errorf("HF_ENDPOINT=%q is not an http(s) URL: the Hub was not asked (set HF_ENDPOINT to your mirror's https:// URL, or unset it to ask https://huggingface.co)", shown)
	}
	return e, nil
}

// ParseModelInfo reads the model API's answer: its commit SHA.
func ParseModelInfo(body []byte) (string, error) {
	var m struct {
		ID  string `json:"id"`
		SHA string `json:"sha"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "", fmt.Errorf("not a model info answer: %v", err)
	}
	if !reSHA.MatchString(m.SHA) {
		return "", errors.New("no commit SHA in the model info")
	}
	return m.SHA, nil
}

func checkModel(ctx context.Context, c *checker, pl plan, endpoint string) Result {
	u := endpoint + "/api/models/" + pl.pin.Value + "/revision/main"
	var sha string
	err := c.get(ctx, u, "application/json", func(_ *http.Response, body []byte) error {
		s, err := ParseModelInfo(body)
		if err != nil {
			return &uncheckableError{Reason: err.Error()}
		}
		sha = s
		return nil
	})
	var unc *uncheckableError
	if errors.As(err, &unc) && strings.Contains(unc.Reason, "HTTP 401") {
		// the Hub answers 401, not 404, for a repository that does not exist
		err = &goneError{Reason: "HTTP 401: no such public model (removed, renamed or private)"}
	}
	return resultFromErr(pl, err, func() Result {
		return pl.result(OK, "model "+pl.pin.Value+" is on the Hub (main at "+short(sha)+")")
	}, "model "+pl.pin.Value+" is gone from the Hub")
}
