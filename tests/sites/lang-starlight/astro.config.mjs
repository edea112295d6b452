// @ts-check
import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';

// locales: { xx: { lang: 'xx' } } in a comment is not configuration.
export default defineConfig({
	site: 'https://pulleys.example.com/',
	integrations: [
		starlight({
			title: 'Pulleys',
			locales: {
				root: { label: 'English', lang: 'en' },
				fr: { label: 'Français', lang: 'fr' },
				'pt-br': { label: 'Português do Brasil', lang: 'pt-BR' },
			},
			sidebar: [
				{ label: 'Guides', translations: { de: 'Anleitungen', 'zh-CN': '指南' }, autogenerate: { directory: 'guides' } },
			],
		}),
	],
});
