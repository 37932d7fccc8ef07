module github.com/labbridge/bridge

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/rtp v1.10.6 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.bug.st/serial v1.8.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
