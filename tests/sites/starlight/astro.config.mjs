import starlight from '@astrojs/starlight';
export default {integrations: [starlight({title: 'Pulleys'})]};
