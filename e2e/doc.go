// Package e2e holds end-to-end tests of replenish on one machine: the real
// sender, TCP transport and viewer on loopback, and the page in headless
// Chromium. It has no code of its own.
package e2e
