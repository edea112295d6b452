import starlight from '@astrojs/starlight';
import { locales } from './locales.mjs';
export default { integrations: [starlight({ title: 'Pulleys', locales })] };
