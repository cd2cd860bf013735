package ghemu

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"

	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

// appSlug names the App; its installation tokens act as "kedge[bot]".
const appSlug = "kedge"

// GitHub refuses App JWTs that live longer than ten minutes; it tolerates a
// little clock drift on "iat".
const (
	maxJWTLifetime = 10 * time.Minute
	jwtClockSkew   = 60 * time.Second
)

func bearer(authorization string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok {
		return "", false
	}
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		cred = strings.TrimSpace(cred)
		return cred, cred != ""
	}
	return "", false
}

type mintedToken struct {
	installation int64
	expires      time.Time
}

// authenticate checks a request's credentials: the App's JWT on the App
// endpoints, a token elsewhere. Callers hold h.mu.
func (h *Hub) authenticate(rt *route, req *request, authorization string) *response {
	if rt.appAuth {
		req.actor = appSlug
		return checkAppJWT(authorization, h.opts.AppID, h.opts.AppPublicKey, h.opts.Clock())
	}
	token, ok := bearer(authorization)
	if !ok {
		return unauthorized("Requires authentication")
	}
	if rt.name == routeUser {
		return h.authorizeUser(req, token)
	}
	var refused *response
	req.actor, refused = h.authorize(token, req.params["owner"])
	if refused == nil && req.actor == appSlug+"[bot]" && !h.grants(rt) {
		// GitHub's answer to an installation token whose installation
		// lacks the permission the endpoint documents.
		r := errorResponse(http.StatusForbidden, "Resource not accessible by integration", rt.docs)
		r.header = http.Header{"X-Accepted-Github-Permissions": {acceptedPermissions(rt.needs)}}
		return r
	}
	return refused
}

// acceptedPermissions is the X-Accepted-GitHub-Permissions header GitHub
// sends to say what the endpoint accepts: each set that admits it,
// separated by "; " ("issues=write; pull_requests=write" when either does).
func acceptedPermissions(needs []need) string {
	parts := make([]string, len(needs))
	for i, n := range needs {
		parts[i] = n.permission + "=" + n.level
	}
	return strings.Join(parts, "; ")
}

// levels orders GitHub's permission levels.
var levels = map[string]int{"read": 1, "write": 2, "admin": 3}

// grants reports whether the installations' permissions admit rt: one of
// the permissions GitHub's "Permissions required for GitHub Apps" lists
// for the endpoint, at its level. Callers hold h.mu.
func (h *Hub) grants(rt *route) bool {
	if len(rt.needs) == 0 {
		return true
	}
	granted := h.permissions()
	for _, n := range rt.needs {
		if levels[granted[n.permission]] >= levels[n.level] {
			return true
		}
	}
	return false
}

// authorizeUser lets a personal token read its own account; an
// installation token has none, and GitHub refuses it. Callers hold h.mu.
func (h *Hub) authorizeUser(req *request, token string) *response {
	if login, ok := h.opts.Tokens[token]; ok {
		req.actor = login
		return nil
	}
	if t, ok := h.tokens[token]; ok && h.opts.Clock().Before(t.expires) {
		req.actor = appSlug + "[bot]"
		return errorResponse(http.StatusForbidden, "Resource not accessible by integration", "https://docs.github.com/rest/users/users#get-the-authenticated-user")
	}
	return badCredentials()
}

// handleGetUser answers the account a personal token acts as.
func handleGetUser(_ *Server, req *request) *response {
	h := req.hub
	return answer(http.StatusOK, &github.User{
		Login: github.String(req.actor), ID: github.Int64(h.userID(req.actor)), Type: github.String("User"),
		URL: github.String(req.apiBase + "/users/" + req.actor), HTMLURL: github.String(req.webBase + "/" + req.actor),
	})
}

// authorize resolves a token used on a repository of owner to the login it
// acts as. A token of another installation is valid but cannot see the
// repository: GitHub answers 404, as for a private repository it does not
// know. Callers hold h.mu.
func (h *Hub) authorize(token, owner string) (string, *response) {
	if login, ok := h.opts.Tokens[token]; ok {
		return login, nil
	}
	t, ok := h.tokens[token]
	if !ok || !h.opts.Clock().Before(t.expires) {
		return "", badCredentials()
	}
	bot := appSlug + "[bot]"
	if t.installation != h.installationOf(owner) {
		return bot, notFound()
	}
	return bot, nil
}

// installationOf is the installation on owner, 0 for none. Callers hold
// h.mu.
func (h *Hub) installationOf(owner string) int64 {
	for account, id := range h.opts.Installations {
		if strings.EqualFold(account, owner) {
			return id
		}
	}
	return 0
}

// checkAppJWT checks an App JWT the way GitHub documents it: RS256, signed
// by the App's key, iss = App ID, exp in the future and at most ten minutes
// after iat.
func checkAppJWT(authorization string, appID int64, key *rsa.PublicKey, now time.Time) *response {
	undecodable := unauthorized("A JSON web token could not be decoded")
	raw, ok := bearer(authorization)
	if !ok {
		return errorResponse(http.StatusUnauthorized, "Requires authentication", docsAccessToken)
	}
	if key == nil {
		return undecodable
	}
	claims := jwt.MapClaims{}
	parser := jwt.Parser{ValidMethods: []string{"RS256"}, SkipClaimsValidation: true}
	_, err := parser.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return key, nil })
	if err != nil {
		return undecodable
	}
	iss := claimString(claims["iss"])
	if _, err := strconv.ParseInt(iss, 10, 64); err != nil {
		return unauthorized("'Issuer' claim ('iss') must be an Integer")
	}
	if iss != strconv.FormatInt(appID, 10) {
		// Another App's ID: its key would not have signed this.
		return undecodable
	}
	iat, iatOK := claimTime(claims["iat"])
	exp, expOK := claimTime(claims["exp"])
	switch {
	case !iatOK || iat.After(now.Add(jwtClockSkew)):
		return unauthorized("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	case !expOK || !exp.After(now):
		return unauthorized("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	case exp.Sub(iat) > maxJWTLifetime:
		return unauthorized("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

// claimString accepts iss as a string or a number: GitHub takes either.
func claimString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatInt(int64(t), 10)
	case json.Number:
		return t.String()
	}
	return ""
}

// claimTime requires an integral NumericDate: GitHub refuses fractions.
func claimTime(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

func handleAccessToken(_ *Server, req *request) *response {
	h := req.hub
	id, _ := strconv.ParseInt(req.params["id"], 10, 64)
	if id == 0 || !slices.Contains(slices.Collect(maps.Values(h.opts.Installations)), id) {
		return notFound()
	}
	token := gitserver.RandomToken()
	expires := h.now().Add(h.opts.TokenTTL)
	h.tokens[token] = mintedToken{installation: id, expires: expires}
	h.minted[id]++
	return answer(http.StatusCreated, accessToken{
		InstallationToken: github.InstallationToken{
			Token:     &token,
			ExpiresAt: &github.Timestamp{Time: expires},
		},
		Permissions:         h.permissions(),
		RepositorySelection: h.selection,
	})
}

// accessToken adds the field GitHub sends that go-github does not model,
// and sends the permissions as GitHub does: any permission name, not only
// those go-github knows.
type accessToken struct {
	github.InstallationToken
	Permissions         map[string]string `json:"permissions"`
	RepositorySelection string            `json:"repository_selection"`
}

// KedgePermissions are the permissions kedge's App asks for
// (deploy/github-app.json): the default grant of an installation.
func KedgePermissions() map[string]string {
	return map[string]string{"contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"}
}

// permissions are the installations' grant. Callers hold h.mu.
func (h *Hub) permissions() map[string]string {
	if h.opts.Permissions == nil {
		return KedgePermissions()
	}
	return maps.Clone(h.opts.Permissions)
}

// SetPermissions changes what the App's installations are granted, e.g.
// pull_requests "read" only, or none of contents (omitted).
func (h *Hub) SetPermissions(permissions map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts.Permissions = maps.Clone(permissions)
	if h.opts.Permissions == nil {
		h.opts.Permissions = map[string]string{}
	}
}

// SetPermissions changes what the App's installation on the server's
// owner is granted; see Hub.SetPermissions.
func (s *Server) SetPermissions(permissions map[string]string) { s.hub.SetPermissions(permissions) }

// installation is GitHub's installation object, with its permissions as
// GitHub sends them.
type installation struct {
	github.Installation
	Permissions map[string]string `json:"permissions"`
}

// renderInstallation is installation id on account. Callers hold h.mu.
func (h *Hub) renderInstallation(req *request, id int64, account, accountType string) installation {
	return installation{
		Installation: github.Installation{
			ID:                  github.Int64(id),
			AppID:               github.Int64(h.opts.AppID),
			AppSlug:             github.String(appSlug),
			TargetType:          github.String(accountType),
			RepositorySelection: github.String(h.selection),
			Account:             &github.User{Login: github.String(account), Type: github.String(accountType)},
			AccessTokensURL:     github.String(fmt.Sprintf("%s/app/installations/%d/access_tokens", req.apiBase, id)),
			RepositoriesURL:     github.String(req.apiBase + "/installation/repositories"),
			Events:              []string{},
		},
		Permissions: h.permissions(),
	}
}

// handleRepoInstallation answers which installation covers a repository.
func handleRepoInstallation(_ *Server, req *request) *response {
	h, owner := req.hub, req.params["owner"]
	id := h.installationOf(owner)
	if id == 0 || req.repo == nil {
		return notFound()
	}
	return answer(http.StatusOK, h.renderInstallation(req, id, owner, "Organization"))
}

// handleInstallation answers an installation of the App by id.
func handleInstallation(_ *Server, req *request) *response {
	h := req.hub
	id, _ := strconv.ParseInt(req.params["id"], 10, 64)
	for account, installed := range h.opts.Installations {
		if installed == id && id != 0 {
			return answer(http.StatusOK, h.renderInstallation(req, id, account, "Organization"))
		}
	}
	return notFound()
}

// handleAccountInstallation answers the App's installation on an
// organisation or a user account, by the account's name in param.
func handleAccountInstallation(param, accountType string) func(*Server, *request) *response {
	return func(_ *Server, req *request) *response {
		h, account := req.hub, req.params[param]
		id := h.installationOf(account)
		if id == 0 {
			return notFound()
		}
		return answer(http.StatusOK, h.renderInstallation(req, id, account, accountType))
	}
}

// Install installs the App on owner's account as installation id, or
// uninstalls it with id 0, as an organisation's admin may while kedge runs.
func (h *Hub) Install(owner string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	installations := maps.Clone(h.opts.Installations)
	if installations == nil {
		installations = map[string]int64{}
	}
	installations[owner] = id
	h.opts.Installations = installations
}

// MintedTokens counts the installation tokens minted, by installation.
func (h *Hub) MintedTokens() map[int64]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.minted)
}

// MintedTokens is how many installation tokens have been handed out.
func (s *Server) MintedTokens() int {
	n := 0
	for _, minted := range s.hub.MintedTokens() {
		n += minted
	}
	return n
}

// ExpireTokens makes every minted installation token invalid, as if an
// hour had passed.
func (h *Hub) ExpireTokens() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for token, t := range h.tokens {
		t.expires = time.Time{}
		h.tokens[token] = t
	}
}

// ExpireTokens is the Hub's ExpireTokens.
func (s *Server) ExpireTokens() { s.hub.ExpireTokens() }

// ValidTokenFor reports whether token may write to repository
// "owner/name", for the Git server of the same test.
func (h *Hub) ValidTokenFor(fullName, token string) bool {
	owner, _, _ := strings.Cut(fullName, "/")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, refused := h.authorize(token, owner)
	return refused == nil
}

// ValidToken reports whether token may write to the repository, e.g. for a
// Git smart-HTTP server in the same test.
func (s *Server) ValidToken(token string) bool { return s.hub.ValidTokenFor(s.fullName(), token) }
