from widgets import Widget

app = Widget()
app.spin(rate=40)
print("spinning")
