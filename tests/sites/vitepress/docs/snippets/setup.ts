// #region connect
const client = connect('sprockets://localhost')
// #endregion connect
client.close()
