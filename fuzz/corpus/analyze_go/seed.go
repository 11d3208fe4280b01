// Package server serves requests.
package server

import (
	"fmt"
	"github.com/acme/app/internal/store"
)

// MaxConns caps open connections.
const MaxConns = 10

// Server answers requests.
type Server struct {
	Base
	name string
}

// Handler handles one request.
type Handler interface {
	Serve(r Request) error
}

type ID = string

// Serve runs the server.
func (s *Server) Serve(r Request) error {
	if r.Bad() {
		return fmt.Errorf("bad")
	}
	store.Save(r)
	return nil
}

func New(name string) *Server {
	inner := func() int { return 1 }
	_ = inner
	return &Server{name: name}
}
