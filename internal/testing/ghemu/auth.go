package ghemu

import (
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"

	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

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

// authenticateToken resolves a static or minted installation token to the
// login it acts as. Callers hold s.mu.
func (s *Server) authenticateToken(req *request, authorization string) *response {
	token, ok := bearer(authorization)
	if !ok {
		return errorResponse(http.StatusUnauthorized, "Requires authentication", docsRoot)
	}
	if s.tokenAuth != nil {
		login, refused := s.tokenAuth(token)
		req.actor = login
		return refused
	}
	if login, ok := s.opts.Tokens[token]; ok {
		req.actor = login
		return nil
	}
	if expires, ok := s.tokens[token]; ok && s.opts.Clock().Before(expires) {
		req.actor = s.botLogin()
		return nil
	}
	return badCredentials()
}

func (s *Server) botLogin() string { return s.opts.AppSlug + "[bot]" }

// authenticateApp checks the App JWT. Callers hold s.mu.
func (s *Server) authenticateApp(req *request, authorization string) *response {
	if r := checkAppJWT(authorization, s.opts.AppID, s.opts.AppPublicKey, s.opts.Clock()); r != nil {
		return r
	}
	req.actor = s.opts.AppSlug
	return nil
}

// checkAppJWT checks an App JWT the way GitHub documents it: RS256, signed
// by the App's key, iss = App ID, exp in the future and at most ten minutes
// after iat.
func checkAppJWT(authorization string, appID int64, key *rsa.PublicKey, now time.Time) *response {
	raw, ok := bearer(authorization)
	if !ok {
		return errorResponse(http.StatusUnauthorized, "Requires authentication", docsAccessToken)
	}
	if key == nil {
		return errorResponse(http.StatusUnauthorized, "A JSON web token could not be decoded", docsRoot)
	}
	claims := jwt.MapClaims{}
	parser := jwt.Parser{ValidMethods: []string{"RS256"}, SkipClaimsValidation: true}
	_, err := parser.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return key, nil })
	if err != nil {
		return errorResponse(http.StatusUnauthorized, "A JSON web token could not be decoded", docsRoot)
	}
	iss := claimString(claims["iss"])
	if _, err := strconv.ParseInt(iss, 10, 64); err != nil {
		return errorResponse(http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer", docsRoot)
	}
	if iss != strconv.FormatInt(appID, 10) {
		// Another App's ID: its key would not have signed this.
		return errorResponse(http.StatusUnauthorized, "A JSON web token could not be decoded", docsRoot)
	}
	iat, iatOK := claimTime(claims["iat"])
	exp, expOK := claimTime(claims["exp"])
	switch {
	case !iatOK || iat.After(now.Add(jwtClockSkew)):
		return errorResponse(http.StatusUnauthorized,
			"'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued", docsRoot)
	case !expOK || !exp.After(now):
		return errorResponse(http.StatusUnauthorized,
			"'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires", docsRoot)
	case exp.Sub(iat) > maxJWTLifetime:
		return errorResponse(http.StatusUnauthorized,
			"'Expiration time' claim ('exp') is too far in the future", docsRoot)
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

func handleAccessToken(s *Server, req *request) *response {
	if s.opts.InstallationID == 0 || req.params["id"] != strconv.FormatInt(s.opts.InstallationID, 10) {
		return notFound()
	}
	token := gitserver.RandomToken()
	expires := s.now().Add(s.opts.TokenTTL)
	s.tokens[token] = expires
	s.minted++
	return &response{status: http.StatusCreated, body: accessToken{
		InstallationToken: github.InstallationToken{
			Token:     &token,
			ExpiresAt: &github.Timestamp{Time: expires},
			Permissions: &github.InstallationPermissions{
				Contents:     github.String("write"),
				Issues:       github.String("write"),
				Metadata:     github.String("read"),
				PullRequests: github.String("write"),
			},
		},
		RepositorySelection: "selected",
	}}
}

// accessToken adds the field GitHub sends that go-github does not model.
type accessToken struct {
	github.InstallationToken
	RepositorySelection string `json:"repository_selection"`
}

// MintedTokens is how many installation tokens have been handed out.
func (s *Server) MintedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minted
}

// ExpireTokens makes every minted installation token invalid, as if an
// hour had passed.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.tokens {
		s.tokens[t] = time.Time{}
	}
}

// ValidToken reports whether token is a static token or an unexpired
// installation token, e.g. for a Git smart-HTTP server in the same test.
func (s *Server) ValidToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.opts.Tokens[token]; ok {
		return true
	}
	expires, ok := s.tokens[token]
	return ok && s.opts.Clock().Before(expires)
}
