import gearbox

box = gearbox.Box()
box.spin(rate=40)
print(box.rate)
