// SPDX-License-Identifier: BSD-3-Clause
// link_tree.go: links the package against the libglyd of this source tree
// (include/, build/libglyd.a after `make`), the default, so that `go test`
// works in a checkout with nothing installed.

//go:build !glyd_pkgconfig && !glyd_external

package glyd

// #cgo CFLAGS: -I${SRCDIR}/../include
// #cgo LDFLAGS: ${SRCDIR}/../build/libglyd.a -lxxhash -lpthread -lm
import "C"
