// SPDX-License-Identifier: BSD-3-Clause
// link_pkgconfig.go: links the package against an installed libglyd found
// by pkg-config (`make install`), with `go build -tags glyd_pkgconfig`.

//go:build glyd_pkgconfig && !glyd_external

package glyd

// #cgo pkg-config: glyd
import "C"
