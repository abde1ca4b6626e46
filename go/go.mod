module glyd.dev/glyd

go 1.19
