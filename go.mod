module replenish

go 1.26.8

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/gorilla/websocket v1.5.3
	github.com/pion/rtcp v1.2.20
	github.com/pion/rtp v1.10.6
	golang.org/x/image v0.48.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/pion/randutil v0.1.0 // indirect
)
