export function hello() {
  return 'hello from a raw import';
}
