from cloudadmin.cli import app

app(prog_name="cloudadmin")
