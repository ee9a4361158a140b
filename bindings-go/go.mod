module github.com/sett-db/sett-go

go 1.22
