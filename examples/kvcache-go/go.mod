module kvspec.example/kvcache-go

go 1.19
